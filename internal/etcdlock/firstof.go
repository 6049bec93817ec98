//go:build linux

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crongate/crongate/internal/lockset"
)

// OpenFirstOf implements lockset.FirstOfBackend. Every set is
// canonicalised and named relative to the key root now. Each set must fit
// in one transaction (MaxTxnOps paths): a busy single transaction puts
// nothing, so a set that was not taken leaves no key behind without the
// shared lease being revoked.
func (b *Backend) OpenFirstOf(pools []lockset.PoolSpec, sets [][]string) (lockset.FirstOfClaim, error) {
	f := &firstClaim{b: b, chosen: -1}
	if len(pools) > 0 {
		c, err := b.Open(lockset.Request{Pools: pools})
		if err != nil {
			return nil, err
		}
		f.slots = c.(*claim)
	}
	for i, s := range sets {
		c, err := b.Open(lockset.Request{Paths: s})
		if err != nil {
			return nil, err
		}
		cl := c.(*claim)
		if len(cl.keys) > MaxTxnOps {
			return nil, fmt.Errorf("--first-of on etcd: candidate set %d has %d paths; each set must fit in one transaction (at most %d)", i, len(cl.keys), MaxTxnOps)
		}
		f.sets = append(f.sets, cl)
	}
	return f, nil
}

// firstClaim is the etcd FirstOfClaim. The slots and the set taken live on
// one lease: the slot claim's (or one granted for the sets when there are
// no pools), which every set's transaction is put under in turn.
type firstClaim struct {
	b      *Backend
	slots  *claim // nil without pools
	sets   []*claim
	chosen int
	held   *held
	// busyKey is what was busy in the last attempt, for WaitChange: a
	// full pool's claim, or nil when the sets were.
	busyPool bool
}

func (f *firstClaim) TryAcquire() (lockset.Held, error) {
	if f.held != nil && !f.held.released {
		return nil, errors.New("etcdlock: first-of claim already held")
	}
	f.chosen, f.held, f.busyPool = -1, nil, false
	var l *lease
	var slots []int
	if f.slots != nil {
		hs, err := f.slots.TryAcquire()
		if err != nil {
			f.busyPool = errors.Is(err, lockset.ErrBusy)
			return nil, err
		}
		h := hs.(*held)
		l, slots = h.lease, h.slots
		// From here the lease is this claim's: the slot claim must not
		// revoke it on Close.
		f.slots.held, f.slots.lease = nil, nil
	} else {
		var err error
		if l, err = grant(f.b); err != nil {
			return nil, err
		}
	}
	var first lockset.BusyError
	for i, c := range f.sets {
		c.lease = l
		h, err := c.attempt(time.Now().Add(f.b.rto))
		c.lease = nil // the lease is not the set claim's to revoke
		if err == nil {
			h.slots = slots
			f.chosen, f.held = i, h
			return h, nil
		}
		be, ok := errors.AsType[*BusyError](err)
		if !ok || be.partial {
			// An error, or a transaction whose outcome is unknown: the
			// lease is the fence (a put under a revoked lease never
			// applies), and it takes the slots with it.
			l.revoke(f.b)
			return nil, err
		}
		if first == nil {
			first = be
		}
	}
	l.revoke(f.b)
	return nil, &lockset.AllBusyError{Sets: len(f.sets), First: first}
}

// Candidate implements lockset.FirstOfClaim.
func (f *firstClaim) Candidate() int { return f.chosen }

// WaitChange waits as the slot claim does for a full pool; when every set
// was busy it waits for poll (or ctx): any of the sets may come free.
func (f *firstClaim) WaitChange(ctx context.Context, poll time.Duration) error {
	if f.busyPool {
		return f.slots.WaitChange(ctx, poll)
	}
	t := time.NewTimer(poll)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return ctx.Err()
}

// Close releases what is held.
func (f *firstClaim) Close() {
	if f.held != nil {
		f.held.Release()
	}
	if f.slots != nil {
		f.slots.Close()
	}
}

var _ lockset.FirstOfBackend = (*Backend)(nil)
