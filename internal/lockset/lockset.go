//go:build linux

// Package lockset takes everything one command needs — a set of path locks
// and one slot from each of several pools — all or nothing, through a
// Backend. The CLI talks only to this package, so a distributed backend can
// stand beside the local flock one without the CLI changing: what differs
// between backends shows through the optional interfaces below (BusyError
// on contention, Leased for locks that live on a lease, ErrUnavailable for
// a coordinator that does not answer), never through a backend's own types.
//
// Guarantees, for every backend:
//   - after TryAcquire either every path lock and one slot of every pool is
//     held, or nothing is;
//   - Acquire with a wait never holds a subset while it waits: it retries
//     the whole set, and between attempts holds nothing.
package lockset

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/crongate/crongate/lockfile"
)

// PoolSpec names a slot pool: Size slots, files from Template ("{i}").
type PoolSpec struct {
	Size     int
	Template string
}

// Request is what one command needs held.
type Request struct {
	Paths []string // as the user gave them; the backend canonicalises
	Pools []PoolSpec
}

// Held is a granted request. Release is idempotent.
type Held interface {
	// Paths returns the canonical paths held, in acquisition order.
	Paths() []string
	// Slots returns the slot index held in each pool, in request order.
	Slots() []int
	// Files returns descriptors that carry the locks, for the command to
	// inherit (nil for a backend whose locks are not descriptors).
	Files() []*os.File
	// Lost is closed if the backend learns that exclusivity is gone (a
	// lease expired); nil for a backend whose locks cannot be lost.
	Lost() <-chan struct{}
	// Release gives everything back.
	Release()
}

// Claim is a prepared request on one backend.
type Claim interface {
	// TryAcquire takes everything or nothing, without blocking. When
	// something is busy the error wraps ErrBusy and is a BusyError (a
	// *lockfile.BusyError for the local backend).
	TryAcquire() (Held, error)
	// WaitChange blocks until something that was busy in the last attempt
	// may have been released, or ctx ends, or at most poll has passed (a
	// backend woken by the release itself, such as a local waiter blocked
	// in flock(2), need not return at poll).
	WaitChange(ctx context.Context, poll time.Duration) error
	// Close releases everything the claim holds or keeps open.
	Close()
}

// Backend turns a request into a claim. Errors from Open are the caller's
// own failures (bad paths, unusable lock dir), never contention.
type Backend interface {
	Open(Request) (Claim, error)
}

// ErrBusy is wrapped by every backend's contention error.
var ErrBusy = lockfile.ErrBusy

// BusyError is implemented by every backend's contention error (which also
// wraps ErrBusy): it says what was busy and, once FindHolders has run, who
// holds it.
type BusyError interface {
	error
	// FindHolders looks up who holds what was busy, so that Error names
	// them. It may cost a read of /proc/locks, so a caller runs it only
	// for an error it is about to show; a backend that learns the
	// holders with its answer does nothing here. The answer can be stale
	// by the time it is read: it is for messages only.
	FindHolders()
}

// ErrUnavailable is wrapped by the errors of a backend whose coordinator
// (an etcd cluster) could not be reached or did not answer in time.
// Nothing is held after it. The local backend never returns it.
var ErrUnavailable = errors.New("coordinator unavailable")

// Leased is a Held whose locks live on a lease that this process keeps
// alive (an etcd lease), not on descriptors. Two things follow for a
// caller that runs a command under them:
//   - the locks cannot be handed to the command (Files is nil): they end
//     when this process ends (when the lease expires, within TTL), so the
//     command must end with this process;
//   - Lost closes when renewals have stopped for long enough that the
//     lease is at risk, before the coordinator can have expired it; the
//     command must then be stopped by KillBy, after which another holder
//     may take the locks.
type Leased interface {
	Held
	// KillBy is the latest moment a command may still run under the
	// locks once Lost has closed.
	KillBy() time.Time
	// LostReason says why Lost closed ("" while it has not).
	LostReason() string
	// TTL is the lease's time to live: the longest the locks outlive
	// this process, or a Release that failed.
	TTL() time.Duration
	// ReleaseErr is the failure of Release, if any: the locks then end
	// with the lease, within TTL.
	ReleaseErr() error
}

// Started is implemented by a Held that still has bookkeeping to finish
// once it holds, work the caller does after the command has started, off
// the path from a release to the command running (the local backend's
// queue ticket: docs/withlock.md, "Fair waiting"). Release does it too.
type Started interface {
	Started()
}

// Noted is implemented by a Claim that has something for -v to say after
// an attempt, whatever its outcome (the local backend: that its waiting
// queue could not be used, so the claim waits unqueued).
type Noted interface {
	Notes() []string
}

// Poll is the longest a waiter sleeps between attempts when no release
// event arrives. A local waiter for a busy path waits in flock(2) and is
// woken by the release itself (close, exit or LOCK_UN); slot pools and
// queued waiters are woken by inotify on a close, and this bounds the
// delay for their holders that unlock without closing, or file systems
// without inotify.
const Poll = 250 * time.Millisecond

// Acquire takes the claim, retrying the whole set until wait has passed (a
// zero wait tries once). It returns the last busy error if the time runs
// out, or ctx's error if ctx ends first.
//
// A coordinator that does not answer (ErrUnavailable: an election, a
// member replaced, a cluster restarting) is waited out like a busy lock
// while the wait lasts: each try is an all-or-nothing transaction, so a
// try sent again can never share a lock, and a caller who said how long
// it may wait does not fail in the middle of that wait for a cause that
// passes. The last such error is returned when the wait runs out.
func Acquire(ctx context.Context, c Claim, wait time.Duration) (Held, error) {
	h, err := c.TryAcquire()
	if err == nil || wait <= 0 || !waitable(err) {
		return h, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var werr error
		if errors.Is(err, ErrUnavailable) {
			werr = sleep(ctx, Poll) // no release to watch for: try again
		} else {
			werr = c.WaitChange(ctx, Poll)
		}
		if werr != nil {
			if ctx.Err() == context.DeadlineExceeded && !errors.Is(err, ErrUnavailable) {
				// One last try: a release may have raced the deadline.
				if h, err2 := c.TryAcquire(); err2 == nil || !waitable(err2) {
					return h, err2
				}
				return nil, err
			}
			if ctx.Err() == context.DeadlineExceeded {
				return nil, err
			}
			return nil, werr
		}
		h, err = c.TryAcquire()
		if err == nil || !waitable(err) {
			return h, err
		}
	}
}

// waitable reports whether a failed try is one that a wait goes on after:
// busy, or a coordinator that did not answer.
func waitable(err error) bool {
	return errors.Is(err, ErrBusy) || errors.Is(err, ErrUnavailable)
}

// sleep waits d or until ctx ends, whichever is first; ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
