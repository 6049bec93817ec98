//go:build linux

// Package lockset takes everything one command needs — a set of path locks
// and one slot from each of several pools — all or nothing, through a
// Backend. The CLI talks only to this package, so a distributed backend can
// stand beside the local flock one without the CLI changing.
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
	// something is busy the error wraps ErrBusy (a *lockfile.BusyError for
	// the local backend).
	TryAcquire() (Held, error)
	// WaitChange blocks until something that was busy in the last attempt
	// may have been released, or ctx ends, or at most poll has passed.
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

// Poll is the longest a waiter sleeps between attempts when no release
// event arrives. Releases by close (the Python rule, flock(1), process exit)
// wake waiters at once; this only bounds the delay for holders that unlock
// without closing, or file systems without inotify.
const Poll = 250 * time.Millisecond

// Acquire takes the claim, retrying the whole set until wait has passed (a
// zero wait tries once). It returns the last busy error if the time runs
// out, or ctx's error if ctx ends first.
func Acquire(ctx context.Context, c Claim, wait time.Duration) (Held, error) {
	h, err := c.TryAcquire()
	if err == nil || wait <= 0 || !errors.Is(err, ErrBusy) {
		return h, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		if werr := c.WaitChange(ctx, Poll); werr != nil {
			if ctx.Err() == context.DeadlineExceeded {
				// One last try: a release may have raced the deadline.
				if h, err2 := c.TryAcquire(); err2 == nil || !errors.Is(err2, ErrBusy) {
					return h, err2
				}
				return nil, err
			}
			return nil, werr
		}
		h, err = c.TryAcquire()
		if err == nil || !errors.Is(err, ErrBusy) {
			return h, err
		}
	}
}
