package gate

import (
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/gate/pauses"
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
		{GateStatus{Digest: journal.Digest{LastSkip: &journal.Event{}}}, StateSkipped},
		{GateStatus{Digest: journal.Digest{LastEnd: ok}}, StateOK},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}}, StateFailing},
		{GateStatus{Digest: journal.Digest{LastEnd: ok, LastError: &journal.Event{Time: now}, ErrorIsLatest: true}}, StateError},
		// An error recorded before the last end, even with a later timestamp
		// (the clock was stepped back since), is not the state.
		{GateStatus{Digest: journal.Digest{LastEnd: ok, LastError: &journal.Event{Time: now}}}, StateOK},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}, Pause: &pauses.Pause{By: pauses.ByConfig}}, StatePaused},
		{GateStatus{Digest: journal.Digest{LastEnd: bad}, Pause: &pauses.Pause{}, Running: []journal.Running{{}}}, StateRunning},
	} {
		if got := judge(&c.st); got != c.want {
			t.Errorf("judge(%+v) = %s, want %s", c.st, got, c.want)
		}
	}
}
