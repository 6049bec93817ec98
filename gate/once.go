//go:build linux

package gate

// once_per in the run: a gate whose current period already has a
// successful run skips with reason done; a failure does not count, so the
// next call retries. The period is the one the run was called in
// (PeriodOf), read from the journal's last success.

import (
	"fmt"

	"github.com/crongate/crongate/gate/journal"
)

// oncePer is the run's once_per: the run form's --once-per, else the
// gate's.
func (r *run) oncePer() string {
	if r.inv.OncePer != "" {
		return r.inv.OncePer
	}
	return r.g.OncePer
}

// decideOnce skips the run when its period is done. It holds nothing:
// the period is claimed after the jitter (claimOnce), and checked again
// then.
func (r *run) decideOnce() (code int, decided bool) {
	per := r.oncePer()
	if per == "" {
		return 0, false
	}
	p, ok := PeriodOf(per, r.called, r.g.Location())
	if !ok {
		return r.fail(journal.ReasonConfig, fmt.Errorf("gate %s: once_per %q is not %s", r.inv.Gate, per, eitherOr(OncePers))), true
	}
	r.period = p
	r.base.Period, r.base.OncePer = p.Key(), per
	return r.periodDone()
}

// periodDone skips the run when the journal's last success counts for
// its period.
func (r *run) periodDone() (code int, decided bool) {
	if r.j == nil {
		return 0, false
	}
	p := r.period
	s, err := r.j.Summary()
	if err != nil {
		return r.fail(journal.ReasonState, fmt.Errorf("gate %s: once_per: %w", r.inv.Gate, err)), true
	}
	if ev := s.LastSuccess; ev != nil && SucceededIn(ev, p) {
		return r.skip(journal.ReasonDone, fmt.Sprintf("this period (%s) is done: run %s succeeded at %s",
			p, ev.Run, ev.Time.In(p.Start.Location()).Format("2006-01-02 15:04:05 MST"))), true
	}
	return 0, false
}

// SucceededIn reports whether ev, a successful end, counts for period p:
// the period its run was called in (Event.Period) is p; for a record
// without one (written before once_per was set), its command's start
// lies in p.
func SucceededIn(ev *journal.Event, p Period) bool {
	if ev.Period != "" {
		return ev.Period == p.Key()
	}
	t := ev.Started
	if t.IsZero() {
		t = ev.Time
	}
	return p.Contains(t)
}
