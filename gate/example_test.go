//go:build linux

package gate_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"
)

// A gate runs a command, records the run in its journal, and skips the
// command while the gate is paused; Status reads what happened.
func ExampleRun() {
	stateDir, _ := os.MkdirTemp("", "gate-example-")
	defer os.RemoveAll(stateDir)
	cfg := gate.DefaultConfig()
	cfg.StateDir = stateDir
	// A skip is said only on a terminal unless Verbose (-v) or the
	// config's report_skips: under cron, and here, it would be silent.
	out := &safetext.Printer{Prog: "example", W: os.Stdout, Verbose: true}

	code := gate.Run(gate.Invocation{Gate: "backup", Argv: []string{"true"}, Config: cfg, Out: out})
	fmt.Println("ran:", code)

	// Paused from the command line (pauses.json in the state dir).
	local := gate.NewPauseFile(stateDir)
	local.Set(context.Background(), "backup", gate.Pause{Reason: "disk swap", Who: "ops@host"})
	code = gate.Run(gate.Invocation{Gate: "backup", Argv: []string{"true"}, Config: cfg, Out: out})
	fmt.Println("paused:", code)

	rep, _ := gate.Status(cfg, gate.Pauses{}, time.Now(), "backup")
	g := rep.Gates[0]
	fmt.Println(g.State, g.Runs, g.Successes, g.Skips["paused"])
	// Output:
	// ran: 0
	// example: skipped gate backup: paused by command (ops@host): disk swap
	// paused: 75
	// paused 1 1 1
}
