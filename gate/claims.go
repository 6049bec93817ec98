//go:build linux

package gate

// once_per across hosts ([etcd]): a run whose period is not done on this
// host claims it in the cluster, under a lease kept alive while it runs;
// marks it done on success; releases it on failure. A claim held or a
// period done elsewhere skips the run (done). A lost lease stops the
// command (TERM to its process group) and the run exits 70, so that the
// host that claims the period next never runs beside it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
)

// PeriodClaims claims once_per periods across hosts (package etcdpause).
type PeriodClaims interface {
	// ClaimPeriod claims gate's period (Period.Key) for holder (the run
	// and host), under a lease of ttl kept alive until the claim is done
	// or released. It returns the claim, or, when another holds the
	// period or marked it done, nil and what the cluster says of it
	// ("claimed by …", "done by …"). Errors wrap
	// ErrCoordinatorDown when the cluster could not answer.
	ClaimPeriod(ctx context.Context, gate, period, holder string, ttl time.Duration) (PeriodClaim, string, error)
}

// PeriodClaim is one held claim.
type PeriodClaim interface {
	// Lost is closed when the claim's lease is lost (not kept alive in
	// time): another host may claim the period from then on.
	Lost() <-chan struct{}
	// Done marks the period done (kept for keep), then drops the lease;
	// an error says the mark may not have been made (the lease was lost
	// first, or the cluster did not answer).
	Done(ctx context.Context, keep time.Duration) error
	// Release drops the claim: the period is free again.
	Release()
}

// ClaimTTL is the lease of a period's claim across hosts: a host that
// dies holding it frees the period this long after its last keep-alive.
const ClaimTTL = 10 * time.Second

// ClaimKillAfter is how long a run's command has, once its claim is lost
// (3/4 of ClaimTTL after the last confirmed renewal), between TERM and
// KILL, when --kill-after is longer: KILL then comes at 9/10 of the TTL,
// before the lease can expire and another host claim the period.
const ClaimKillAfter = ClaimTTL*9/10 - ClaimTTL*3/4

// claimShared claims the run's period in the cluster ([etcd]), after the
// local claim. Not held: skip (done). A cluster that cannot answer skips
// (coordinator_down) unless on_coordinator_down = "run".
func (r *run) claimShared() (code int, decided bool) {
	c := r.pauses.Claims
	if c == nil || r.period.Per == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Etcd.TimeoutOr())
	defer cancel()
	claim, other, err := c.ClaimPeriod(ctx, r.inv.Gate, r.period.Key(), fmt.Sprintf("run %s on %s", r.id, r.base.Host), ClaimTTL)
	switch {
	case errors.Is(err, ErrCoordinatorDown) && r.cfg.Etcd.RunOnDown:
		r.note = fmt.Sprintf("once_per across hosts unknown (%v); run as if only this host's journal existed (on_coordinator_down = \"run\")", err)
		r.out.Warnf("gate %s: %s", r.inv.Gate, r.note)
		return 0, false
	case errors.Is(err, ErrCoordinatorDown):
		return r.skip(journal.ReasonCoordinatorDown, fmt.Sprintf("once_per across hosts unknown: %v", err)), true
	case err != nil:
		return r.fail(journal.ReasonState, fmt.Errorf("gate %s: once_per across hosts: %w", r.inv.Gate, err)), true
	case claim == nil:
		return r.skip(journal.ReasonDone, fmt.Sprintf("this period (%s) is %s", r.period, other)), true
	}
	r.claim = claim
	return 0, false
}

// watchClaim returns the signals the command's wait forwards: the run's
// own, and a SIGTERM when the claim's lease is lost (lost is then set),
// then a SIGKILL after KillAfter (runner.DefaultKillAfter when 0), at
// most ClaimKillAfter.
func (r *run) watchClaim() (sigs <-chan os.Signal, stop func()) {
	if r.claim == nil {
		return r.inv.Sigs, func() {}
	}
	out := make(chan os.Signal, 8)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-r.inv.Sigs:
				out <- s
			case <-r.claim.Lost():
				r.lost.Store(true)
				out <- syscall.SIGTERM
				// The lease is lost: the run's own signals now, and KILL
				// once --kill-after has passed, as for a timeout, but at
				// the latest ClaimKillAfter (a command that ignores
				// TERM must be gone before the lease can expire and
				// another host claim the period).
				grace := r.inv.KillAfter
				if grace <= 0 {
					grace = runner.DefaultKillAfter
				}
				grace = min(grace, ClaimKillAfter)
				kill := time.NewTimer(grace)
				defer kill.Stop()
				for {
					select {
					case s := <-r.inv.Sigs:
						out <- s
					case <-kill.C:
						out <- syscall.SIGKILL
					case <-done:
						return
					}
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { close(done) }
}

// endClaim marks the period done after a success, else releases it; a
// lost lease turns the run's exit into 70 (runner.ExitLost).
func (r *run) endClaim(end *journal.Record, code int) int {
	if r.claim == nil {
		return code
	}
	if r.lost.Load() {
		r.claim.Release()
		r.out.Errorf("gate %s: the period's claim (etcd lease) was lost while the command ran; it was stopped", r.inv.Gate)
		return runner.ExitLost
	}
	if end.Outcome != journal.OutcomeSuccess {
		r.claim.Release()
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Etcd.TimeoutOr())
	defer cancel()
	// Kept until an hour past the period's end, by the run's own clock.
	keep := r.period.End.Sub(r.now()) + time.Hour
	if err := r.claim.Done(ctx, keep); err != nil {
		r.out.Warnf("gate %s: the period could not be marked done across hosts (%v); another host may run it again", r.inv.Gate, err)
	}
	return code
}
