//go:build linux

package crongate

import (
	"testing"

	"github.com/crongate/crongate/gate/journal"
)

// why's line for a last skip's holder: a cron-gate run points to its bar
// on the dashboard's timeline; a process alone is named by its pid.
func TestHeldByWords(t *testing.T) {
	for _, c := range []struct {
		h    journal.HeldBy
		want string
	}{
		{journal.HeldBy{Pid: 9, Gate: "a", Run: "R1"}, "held by gate a run R1 (see the dashboard's timeline: /#run-a-R1)"},
		{journal.HeldBy{Pid: 9, Command: "python3 old.py"}, "held by pid 9 (python3 old.py) at the last skip, not a cron-gate run"},
		{journal.HeldBy{Pid: 9}, "held by pid 9 at the last skip, not a cron-gate run"},
	} {
		if got := heldByWords(c.h); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
}
