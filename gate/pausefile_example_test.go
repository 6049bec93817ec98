//go:build linux

package gate_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/crongate/crongate/gate"
)

// A command-line pause with an expiry ends by itself; Clear lifts it
// earlier. Every change is merged under a lock, so concurrent callers
// never lose each other's pauses.
func ExampleFile() {
	stateDir, _ := os.MkdirTemp("", "pauses-example-")
	defer os.RemoveAll(stateDir)
	ctx := context.Background()
	f := gate.NewPauseFile(stateDir)

	now := time.Now()
	f.Set(ctx, "translate", gate.Pause{Reason: "API quota", Until: now.Add(2 * time.Hour)})
	p, _ := f.Get(ctx, "translate")
	fmt.Println(p.Reason, p.Active(now), p.Active(now.Add(3*time.Hour)))

	had, _ := f.Clear(ctx, "translate")
	p, _ = f.Get(ctx, "translate")
	fmt.Println(had, p == nil)
	// Output:
	// API quota true false
	// true true
}
