//go:build linux

package etcdlock

import (
	"context"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// stillBusy reports whether a linearizable read finds the busy path key
// still held since the busy attempt, the full pool still full, or the
// claim still behind earlier waiters for a pool.
func (c *claim) stillBusy() bool {
	if c.busyEnd != "" {
		return c.stillBehindPool()
	}
	if c.busyPrefix {
		return c.stillFull()
	}
	if c.busyKey == "" {
		return false
	}
	var r *clientv3.GetResponse
	err := c.b.pollRead(func(ctx context.Context) (err error) {
		r, err = c.b.cli.Get(ctx, c.busyKey, clientv3.WithKeysOnly())
		return err
	})
	return err == nil && len(r.Kvs) > 0 && r.Kvs[0].CreateRevision <= c.busyRev
}

// pollRead runs read, a waiter's read after a poll interval in which its
// watch reported nothing (a watch on a frozen member is silent), in up
// to three tries of a third of AttemptTimeout each, as a holder renews
// (etcdclient.Renew): a try that gets no answer connects the client to
// every member, and the next goes to the next one in turn, long before
// gRPC's keep-alive would drop a frozen member. Each try asks that the
// member have a leader. It returns the last try's error.
func (b *Backend) pollRead(read func(ctx context.Context) error) error {
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), AttemptTimeout/3)
		err = read(ctx)
		cancel()
		if err == nil {
			return nil
		}
	}
	return err
}

// stillFull reports whether a linearizable read of the pool that was
// full (busyKey, a pool's prefix; keys only) finds it still without a
// free slot for each of the claim's occurrences of it. Without it a
// waiter for a full pool sent its lock transaction at every poll: a
// write through the cluster's log, two with the paths a queued waiter
// then gives back (undo), four times a second.
func (c *claim) stillFull() bool {
	w, ok := c.poolWants()[c.busyKey]
	if !ok {
		return false
	}
	need := 0
	for _, p := range c.pools {
		if p.prefix == c.busyKey {
			need++
		}
	}
	var r *clientv3.GetResponse
	err := c.b.pollRead(func(ctx context.Context) (err error) {
		r, err = c.b.cli.Get(ctx, c.busyKey, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	return err == nil && w.size-countTaken(c.busyKey, w.size, r.Kvs) < need
}

// stillBehindPool reads the queue and the pools again (precheck) for a
// claim that waits behind earlier waiters for one of its pools: true if
// it still does. The watch then goes on from the revision it started at
// (its events since are still to come).
func (c *claim) stillBehindPool() bool {
	rev := c.busyRev
	be := c.precheck()
	if be == nil || c.busyEnd == "" {
		return false
	}
	c.busyRev, c.busy = rev, be
	return true
}

// WaitChange waits until the key (or pool) that was busy is deleted or its
// lease expires, using an etcd watch from the revision the busy attempt saw,
// so a release between that attempt and the watch is not missed.
//
// Every waiter sees a release at once, and each attempt after it is a
// write through the cluster's log, taken or not: with many waiters on one
// key, all but one of them write for nothing at every hand-over (a
// thundering herd, most of the cluster's work under contention). So a
// waiter that has already lost such a race (raced) staggers: after a
// release it waits a random time below stagger, watching, and tries only
// if nobody has taken what was freed meanwhile (a put of the key, or of as
// many slots as were freed); else it waits for the next release. A waiter
// that has not lost a race tries at once, so a lone waiter never waits for
// nothing. This orders nobody: who gets the key after a release is left to
// chance, as before (a fair queue would also make a hand-over one write
// instead of two: the release, then the next holder's transaction).
func (c *claim) WaitChange(ctx context.Context, poll time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, poll)
	defer cancel()
	if c.busyKey == "" {
		<-wctx.Done()
		return ctx.Err()
	}
	// A waiter takes its place in the queue (queue.go) the first time it
	// waits for its paths, so that later sets that intersect its set
	// yield to it.
	if c.keepsLedger() {
		if handled, err := c.waitLedger(ctx, wctx); handled {
			return err
		}
	}
	c.enqueue()
	w := c.watchBusy()
	if w.missed {
		w.missed = false
		if c.busyQueue || !c.raced || c.queued() {
			c.woke = !c.busyQueue
			return ctx.Err()
		}
		w.freed, w.try = 1, time.After(rand.N(stagger))
	}
	for {
		select {
		case wr, ok := <-w.ch:
			if !ok || wr.Err() != nil {
				c.stopWatch()
				return ctx.Err()
			}
			if c.busyQueue {
				// Waiting behind an earlier waiter: its key deleted
				// (it took its set, stopped waiting, or its lease
				// ended) may let this one in.
				// Behind waiters for a pool: one of them leaving
				// or a slot of the pool freed.
				for _, ev := range wr.Events {
					if ev.Type == mvccpb.DELETE && (c.busyEnd == "" || c.poolWakes(string(ev.Kv.Key))) {
						return ctx.Err()
					}
				}
				continue
			}
			for _, ev := range wr.Events {
				switch {
				case ev.Type == mvccpb.DELETE:
					w.freed++
				case w.freed > 0:
					w.freed-- // taken again by another waiter
				}
			}
			switch {
			case w.freed > 0 && (!c.raced || c.queued()):
				// A queued waiter never staggers: a later one yields
				// to it, whoever it raced before.
				c.woke = true
				return ctx.Err()
			case w.freed > 0 && w.try == nil:
				w.try = time.After(rand.N(stagger))
			case w.freed <= 0:
				w.freed, w.try = 0, nil
			}
		case <-w.try:
			c.woke = true
			return ctx.Err()
		case <-wctx.Done():
			// The poll ran out with the watch healthy and nothing
			// freed: TryAcquire answers busy without a request, and
			// the watch goes on for the next WaitChange.
			c.quiet = ctx.Err() == nil && w.freed <= 0 && c.busy != nil
			return ctx.Err()
		}
	}
}

// busyWatch is a watch of what the last attempt found busy, from the
// revision at which it was busy: kept across WaitChange calls while that
// does not change (a watch started again would replay every change since
// that revision, each time).
type busyWatch struct {
	key    string
	prefix bool
	end    string // a range [key, end)
	rev    int64
	ch     clientv3.WatchChan
	cancel context.CancelFunc
	freed  int              // deletes minus puts since the first delete
	missed bool             // released before the watch began (watchFromNow)
	try    <-chan time.Time // when a staggering waiter tries
}

// watchBusy returns the watch of what is busy now, started if need be.
func (c *claim) watchBusy() *busyWatch {
	if w := c.watch; w != nil && w.key == c.busyKey && w.prefix == c.busyPrefix && w.end == c.busyEnd && w.rev == c.busyRev {
		return w
	}
	c.stopWatch()
	if !c.busyPrefix && c.busyEnd == "" && c.busyRev > 0 {
		if w := c.watchFromNow(); w != nil {
			c.watch = w
			return w
		}
	}
	var opts []clientv3.OpOption
	if c.busyRev > 0 {
		opts = append(opts, clientv3.WithRev(c.busyRev+1))
	}
	switch {
	case c.busyPrefix:
		opts = append(opts, clientv3.WithPrefix())
	case c.busyEnd != "":
		opts = append(opts, clientv3.WithRange(c.busyEnd))
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	c.watch = &busyWatch{key: c.busyKey, prefix: c.busyPrefix, end: c.busyEnd, rev: c.busyRev, cancel: cancel,
		ch: c.b.cli.Watch(ctx, c.busyKey, opts...)}
	return c.watch
}

// watchFromNow watches the busy key from the revision at which the watch
// is created, then reads the key: if it was deleted (or taken again) since
// the busy read, missed is set. A watch from a past revision would see
// that too, but etcd delivers the events of a watch that starts behind its
// current revision from a loop that runs every 100 ms: under contention,
// where every hand-over makes the next waiter start a watch behind a few
// writes, that wait was most of a hand-over. nil if the watch was not
// created within AttemptTimeout (the caller then watches from the busy
// revision).
func (c *claim) watchFromNow() *busyWatch {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	w := &busyWatch{key: c.busyKey, rev: c.busyRev, cancel: cancel,
		ch: c.b.cli.Watch(ctx, c.busyKey, clientv3.WithCreatedNotify())}
	t := time.NewTimer(AttemptTimeout)
	defer t.Stop()
	select {
	case wr, ok := <-w.ch:
		if !ok || wr.Err() != nil || !wr.Created {
			cancel()
			return nil
		}
		if wr.Header.Revision <= c.busyRev {
			return w // nothing was written since the busy read
		}
	case <-t.C:
		cancel()
		return nil
	}
	rctx, rcancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer rcancel()
	r, err := c.b.cli.Get(rctx, c.busyKey, clientv3.WithKeysOnly())
	w.missed = err != nil || len(r.Kvs) == 0 || r.Kvs[0].CreateRevision > c.busyRev
	return w
}

func (c *claim) stopWatch() {
	if c.watch != nil {
		c.watch.cancel()
		c.watch = nil
	}
}

// stagger bounds how long a waiter that lost a race for a key waits,
// after the next release, before it tries (WaitChange): long enough for
// the put of the waiter that tried first to reach the others (a few
// milliseconds on a loaded host), short next to a critical section.
const stagger = 20 * time.Millisecond
