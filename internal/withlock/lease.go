//go:build linux

package withlock

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
)

// underLease readies a command that runs under locks held on a lease
// (lockset.Leased). Such locks cannot be inherited: if withlock dies, the
// lease expires within its TTL and another host may take them. So the
// command is started with a parent-death signal (runner's KillWithParent):
// the kernel kills it the moment withlock dies. A lease lost before the
// command starts ends the run as a coordinator that does not answer does
// (--on-coordinator-down): the command has not run.
func (r *run) underLease(child *runner.Child, l lockset.Leased) (code int, stop bool) {
	child.KillWithParent()
	select {
	case <-l.Lost():
		r.out.Errorf("lost the %s lease before starting %s: %s", r.backend, QuoteArgs(r.o.Command), l.LostReason())
		return r.fail(nil, unavailable(r.backend)), true
	default:
	}
	return 0, false
}

// unavailable is the error of a coordinator whose lease was lost before
// the command started: "etcd unavailable".
type unavailable string // the backend's name

func (u unavailable) Error() string { return string(u) + " unavailable" }
func (unavailable) Unwrap() error   { return lockset.ErrUnavailable }

// waitLeased waits for a command that runs under a lease, forwarding the
// signals on sigs to it. If the lease is lost meanwhile, it stops the
// command: TERM at once, KILL at the latest just before the lease can
// expire on the coordinator (KillBy), or after --kill-after if that comes
// sooner; r.lost then says so, and withlock exits 70 whatever the command
// exited with, since another host may have taken its locks.
func (r *run) waitLeased(child *runner.Child, sigs <-chan os.Signal, start time.Time, l lockset.Leased) runner.Result {
	csigs := make(chan os.Signal, 8)
	stop := make(chan struct{})
	var lost atomic.Bool
	go func() {
		var kill <-chan time.Time
		lostc := l.Lost()
		for {
			select {
			case s := <-sigs:
				csigs <- s
			case <-lostc:
				lostc = nil
				lost.Store(true)
				at := max(min(time.Until(l.KillBy()), r.o.KillAfter), 0)
				r.out.Errorf("lost the %s lease: %s; stopping %s (TERM now, KILL in %v)",
					r.backend, l.LostReason(), QuoteArgs(r.o.Command), at.Round(time.Millisecond))
				csigs <- unix.SIGTERM
				kill = time.After(at)
			case <-kill:
				kill = nil
				csigs <- unix.SIGKILL
			case <-stop:
				return
			}
		}
	}()
	res := child.Wait(csigs, start)
	close(stop)
	r.lost = lost.Load() || r.expiredMeanwhile(l)
	return res
}

// expiredMeanwhile is for a command that ended while withlock was stopped
// (SIGSTOP, a frozen VM) or starved past KillBy, its lease unconfirmed:
// the lease may have expired — another host may have taken the locks
// while the command ran — or may still live (the lock delay), and only
// the renewal that the backend sends on waking can tell. It waits for
// that answer (Lost closes, or KillBy moves on: the lease lived, the locks
// were held throughout) for at most the lease's TTL, and reports the lease
// lost, with why, if it did not live.
func (r *run) expiredMeanwhile(l lockset.Leased) bool {
	if time.Now().Before(l.KillBy()) {
		return false
	}
	limit := time.After(l.TTL())
	for time.Now().After(l.KillBy()) {
		select {
		case <-l.Lost():
			r.out.Errorf("lost the %s lease: %s; %s had already exited (this process was stopped or starved meanwhile)",
				r.backend, l.LostReason(), QuoteArgs(r.o.Command))
			return true
		case <-limit:
			r.out.Errorf("lost the %s lease: no renewal confirmed it within %v after %s exited (this process was stopped or starved meanwhile)",
				r.backend, l.TTL(), QuoteArgs(r.o.Command))
			return true
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}
