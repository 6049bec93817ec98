package gate

import (
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
)

func TestJudge(t *testing.T) {
	now := time.Now()
	ok := &journal.Event{Time: now.Add(-time.Hour), Outcome: journal.OutcomeSuccess}
	bad := &journal.Event{Time: now.Add(-time.Minute), Outcome: journal.OutcomeFailure}
	for _, c := range []struct {
		st   GateStatus
		want string
	}{
		{GateStatus{}, StateNeverRun},
		// Only paused skips: it never tried.
		{GateStatus{Digest: journal.Digest{LastSkip: &journal.Event{}}}, StateNeverRun},
		{GateStatus{Digest: journal.Digest{LastSkip: &journal.Event{}}, Skipping: &Skipping{Skips: 1}}, StateSkipped},
		// ok means the last attempt ran and succeeded: a skip since is not ok.
		{GateStatus{Digest: journal.Digest{LastEnd: ok}, Skipping: &Skipping{Skips: 1}}, StateSkipped},
		{GateStatus{Digest: journal.Digest{LastEnd: ok}, Skipping: &Skipping{Skips: 3, Blocked: true}}, StateBlocked},
		// Failing outranks blocked; paused and running outrank both.
		{GateStatus{Digest: journal.Digest{LastEnd: bad}, Skipping: &Skipping{Blocked: true}}, StateFailing},
		{GateStatus{Digest: journal.Digest{LastEnd: ok}, Skipping: &Skipping{Blocked: true}, Pause: &Pause{}}, StatePaused},
		{GateStatus{Digest: journal.Digest{LastEnd: ok}}, StateOK},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}}, StateFailing},
		{GateStatus{Digest: journal.Digest{LastEnd: ok, LastError: &journal.Event{Time: now}, ErrorIsLatest: true}}, StateError},
		// An error recorded before the last end, even with a later timestamp
		// (the clock was stepped back since), is not the state.
		{GateStatus{Digest: journal.Digest{LastEnd: ok, LastError: &journal.Event{Time: now}}}, StateOK},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}, Pause: &Pause{By: ByConfig}}, StatePaused},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}, Pause: &Pause{}, Running: []journal.Running{{}}}, StateRunning},
	} {
		if got := judge(&c.st); got != c.want {
			t.Errorf("judge(%+v) = %s, want %s", c.st, got, c.want)
		}
	}
}
