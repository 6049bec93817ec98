//go:build linux

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

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

	// Waiting while every set is busy (WaitChange): rev is the revision
	// of the last attempt's first read; busy its answer; ours the leases
	// this claim granted (their keys' deletes are its own revokes, not
	// releases); watch a watch of every delete under the prefix from
	// rev+1, kept for the whole wait; quiet: the last WaitChange ran out
	// its poll with the watch healthy and no release seen.
	rev   int64
	busy  error
	ours  map[clientv3.LeaseID]bool
	watch *firstWatch
	quiet bool

	// The queue (queue.go): a waiter puts a queue key for its first set
	// (the caller's first choice) under a lease of its own, kept while it
	// waits, so that later sets that intersect that set yield to it; it
	// still takes any other set the moment that one is free, and yields
	// only to queue keys created before its own.
	qlease *lease // nil: not queued
	qkey   string
	qrev   int64
}

// firstWatch is the watch of a waiting first-of claim.
type firstWatch struct {
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

func (f *firstClaim) TryAcquire() (lockset.Held, error) {
	if f.held != nil && !f.held.released {
		return nil, errors.New("etcdlock: first-of claim already held")
	}
	if f.quiet && f.stillAllBusy() {
		// The watch saw no release since the last attempt and one read
		// (no write; an attempt is a transaction per set) finds every
		// set still busy: nothing to try. The read catches a release
		// that a watch stuck on a frozen member has not reported.
		f.quiet = false
		return nil, f.busy
	}
	f.quiet = false
	h, err := f.attempt()
	if _, ok := errors.AsType[*lockset.AllBusyError](err); !ok {
		// Taken, a full pool, or an error: no wait on the sets follows
		// (a watch left open would buffer every delete under the
		// prefix while the command runs).
		f.stopWatch()
	}
	return h, err
}

// attempt is one try of TryAcquire: the slots, then every set in turn.
func (f *firstClaim) attempt() (lockset.Held, error) {
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
	// Our leases, whose keys' deletes are not releases: this attempt's
	// (revoked below if every set is busy) and the queue key's. Those of
	// earlier attempts were revoked before this attempt's read.
	f.ours = map[clientv3.LeaseID]bool{l.id: true}
	if f.qlease != nil {
		f.ours[f.qlease.id] = true
	}
	// A set that intersects a waiting set is left to its waiter (fair
	// waiting, queue.go), as a plain claim's is.
	q, rev := f.b.readQueue()
	q = f.before(q)
	for i, c := range f.sets {
		if be := c.ahead(q, 0, nil); be != nil {
			if first == nil {
				first = be
			}
			continue
		}
		c.lease = l
		h, err := c.attempt(time.Now().Add(f.b.rto))
		c.lease = nil // the lease is not the set claim's to revoke
		if err == nil {
			h.slots = slots
			h.started = f.dequeue
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
	f.rev = rev
	f.busy = &lockset.AllBusyError{Sets: len(f.sets), First: first}
	return nil, f.busy
}

// stillAllBusy reads, in one read of the held path keys and the queue
// (the range from PREFIX/paths/ to the end of PREFIX/queue/), whether every
// set still has a key held or is left to an earlier waiter. false if the
// read got no answer in time.
func (f *firstClaim) stillAllBusy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	from, to := f.b.waitRange()
	resp, err := f.b.cli.Get(ctx, from, clientv3.WithRange(to))
	if err != nil {
		return false
	}
	held, q := f.b.splitWaitRange(resp.Kvs)
	q = f.before(q)
sets:
	for _, c := range f.sets {
		if c.ahead(q, 0, nil) != nil {
			continue
		}
		for _, k := range c.keys {
			if held[k.key] {
				continue sets
			}
		}
		return false
	}
	return true
}

// waitRange is the key range a first-of waiter watches and reads: the path
// keys and the queue (PREFIX/paths/ sorts before PREFIX/queue/, and the
// slots' keys after both), [from, to).
func (b *Backend) waitRange() (from, to string) {
	return PathsPrefix(b.cfg.Prefix), clientv3.GetPrefixRangeEnd(b.queuePrefix())
}

// Candidate implements lockset.FirstOfClaim.
func (f *firstClaim) Candidate() int { return f.chosen }

// WaitChange waits as the slot claim does for a full pool. When every set
// was busy it watches the deletes of path keys and queue keys (a path
// released, a holder's lease ended, a waiter leaving the queue; not the
// slots, which every attempt takes and gives back) from the revision of
// the last attempt's first read, and returns at the first that is not its
// own: any of the sets may then be free. A waiter sends nothing while nothing
// is released (TryAcquire after a quiet poll only reads).
func (f *firstClaim) WaitChange(ctx context.Context, poll time.Duration) error {
	// Queued for its first set whatever it waits for, a full pool
	// included (the local backend's ticket names both): a later set that
	// intersects that set yields to it meanwhile.
	f.enqueue()
	if f.busyPool {
		return f.slots.WaitChange(ctx, poll)
	}
	t := time.NewTimer(poll)
	defer t.Stop()
	if f.rev == 0 {
		// The attempt read nothing (no answer in time): no revision to
		// watch from; try again after the poll.
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return ctx.Err()
	}
	from, to := f.b.waitRange()
	if f.watch == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
		f.watch = &firstWatch{cancel: cancel, ch: f.b.cli.Watch(wctx, from,
			clientv3.WithRange(to), clientv3.WithRev(f.rev+1), clientv3.WithFilterPut(), clientv3.WithPrevKV())}
	}
	for {
		select {
		case wr, ok := <-f.watch.ch:
			if !ok || wr.Err() != nil {
				f.stopWatch()
				return ctx.Err()
			}
			for _, ev := range wr.Events {
				if ev.Type != mvccpb.DELETE || ev.Kv.ModRevision <= f.rev {
					continue // seen by the last attempt
				}
				if k := string(ev.Kv.Key); !strings.HasPrefix(k, from) && !strings.HasPrefix(k, f.b.queuePrefix()) {
					continue // another key in the range, not ours to wait for
				}
				if ev.PrevKv != nil && f.ours[clientv3.LeaseID(ev.PrevKv.Lease)] {
					continue // our own lease revoked after a busy attempt
				}
				return ctx.Err()
			}
		case <-t.C:
			f.quiet = ctx.Err() == nil && f.busy != nil
			return ctx.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// before returns the queue keys of q created before the claim's own (all
// of them if it is not queued), its own left out.
func (f *firstClaim) before(q []*queueKV) []*queueKV {
	if f.qlease == nil {
		return q
	}
	var b []*queueKV
	for _, kv := range q {
		if kv.rev >= f.qrev {
			break // q is in create revision order
		}
		if kv.key != f.qkey {
			b = append(b, kv)
		}
	}
	return b
}

// enqueue puts the claim's queue key for its first set, under a lease of
// its own, unless it is queued already (a lost lease is replaced). A set
// larger than maxQueued is not queued, and an enqueue that fails leaves
// the claim waiting unqueued; the next WaitChange tries again.
func (f *firstClaim) enqueue() {
	if f.qlease != nil && !f.qlease.isLost() {
		return
	}
	f.dequeue()
	if len(f.sets) == 0 || len(f.sets[0].keys) > maxQueued {
		return
	}
	l, err := f.b.newLease()
	if err != nil {
		return
	}
	key, rev, _, err := f.sets[0].putQueueKey(l)
	if err != nil {
		l.revoke(f.b)
		return
	}
	if f.ours == nil {
		f.ours = map[clientv3.LeaseID]bool{}
	}
	f.ours[l.id] = true
	f.qlease, f.qkey, f.qrev = l, key, rev
}

// dequeue leaves the queue: its lease revoked, the key goes with it.
func (f *firstClaim) dequeue() {
	if f.qlease != nil {
		f.qlease.revoke(f.b)
		f.qlease, f.qkey, f.qrev = nil, "", 0
	}
}

func (f *firstClaim) stopWatch() {
	if f.watch != nil {
		f.watch.cancel()
		f.watch = nil
	}
}

// Close releases what is held.
func (f *firstClaim) Close() {
	f.stopWatch()
	f.dequeue()
	if f.held != nil {
		f.held.Release()
	}
	if f.slots != nil {
		f.slots.Close()
	}
}

var _ lockset.FirstOfBackend = (*Backend)(nil)
