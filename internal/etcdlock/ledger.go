//go:build linux

package etcdlock

import (
	"context"
	"errors"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/etcdclient"
)

// A queued waiter's ledger: what it waits for, kept from one watch
// instead of a read at every wake-up.
//
// Once a claim has entered the queue and read it since, no waiter can
// come ahead of it (queue.go), so what it waits for is known and can
// only shrink: the queue keys of the earlier waiters whose sets
// intersect its own, and its path keys held by others. A holder keeps
// its queue key until it releases (its lease takes both), so a waiter
// ahead that takes the set stays in the ledger until it is done, and
// the key it holds goes out in the same revision as its queue key.
//
// The ledger is filled from one read made in the transaction that puts
// the claim's queue key (or, for a claim queued already, from a read of
// the queue and the keys), after a watch of the path keys and the queue
// has started: deletes only, from before that read, so none is missed.
// A delete of a key in the ledger at a revision above the key's create
// revision takes it out (a delete older than the key read is another
// holder's). When the ledger is empty the claim goes straight to the
// lock transaction, with no read before it; a transaction that finds a
// key held (a holder that never queued: a call without --wait, or an
// older withlock that leaves the queue when it takes its set) puts that
// key in the ledger. Per hand-over a waiter then makes one request, the
// lock transaction, where reading first and watching each key in turn
// made three or four.
//
// The watch covers every path key and queue key of the key prefix, so a
// waiter is sent the deletes of every release under the prefix, not its
// own paths only; it filters them itself. A poll interval without the
// ledger emptying (a watch on a frozen member is silent) makes the next
// try read the ledger's keys (stillWaits: one read, no write). A watch
// that ends drops the ledger: the next attempt reads the queue and the
// keys first, and the next wait opens a ledger again (a read of the
// queue and the keys, for a claim queued already).
//
// The skip of a holder's queue key relies on queueValue.Keeps: a waiter
// with pools can hold path keys for a moment while it waits.
//
// Sets with slot pools wait as before: what a pool waiter waits for
// depends on the free slots at each try. So do sets too large to read
// with the queue in one transaction.
type ledger struct {
	lease   clientv3.LeaseID // the queue key's lease the ledger was taken under
	wait    map[string]int64 // key → its create revision as read; nil until a read since the claim entered the queue filled it
	recheck bool             // a poll interval passed with wait not empty: read before the next attempt
	ch      clientv3.WatchChan
	cancel  context.CancelFunc
}

// errNoLease: no lease could be granted to put the queue key under.
var errNoLease = errors.New("no lease for the queue key")

// keepsLedger reports whether the claim waits with a ledger: a set of
// paths without pools, small enough to be read whole with the queue in
// the transaction that puts its queue key.
func (c *claim) keepsLedger() bool {
	return len(c.pools) == 0 && len(c.keys) > 0 && len(c.keys) <= MaxTxnOps-2
}

// take fills the ledger from a read of the queue (q, in create revision
// order, holders' keys left out) and of every path key of the claim
// (reads[i] is keys[i]'s), made since the claim entered the queue. A nil
// ledger, or one of an earlier queue key, takes nothing.
func (l *ledger) take(c *claim, q []*queueKV, reads []*pb.ResponseOp) {
	if l == nil || !c.queued() || l.lease != c.qlease {
		return
	}
	ids := c.ids()
	l.wait = make(map[string]int64)
	for _, kv := range q {
		if kv.rev >= c.qrev {
			break
		}
		if kv.v.intersects(ids) {
			l.wait[kv.key] = kv.rev
		}
	}
	for _, r := range reads {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 && (c.lease == nil || kvs[0].Lease != int64(c.lease.id)) {
			l.wait[string(kvs[0].Key)] = kvs[0].CreateRevision
		}
	}
	l.recheck = false
}

// hold records a path key that a lock transaction found held.
func (l *ledger) hold(key string, created int64) {
	if l != nil && l.wait != nil {
		l.wait[key] = created
	}
}

// apply takes out of the ledger the keys deleted by events.
func (l *ledger) apply(evs []*clientv3.Event) {
	for _, ev := range evs {
		k := string(ev.Kv.Key)
		if created, ok := l.wait[k]; ok && ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > created {
			delete(l.wait, k)
		}
	}
}

// valid reports whether the ledger is the claim's current one: taken
// while it is queued under the lease it still has.
func (l *ledger) valid(c *claim) bool {
	return l != nil && c.queued() && l.lease == c.qlease
}

// ready reports whether the claim may go straight to the lock
// transaction: its ledger is valid, was filled, and is empty.
func (l *ledger) ready(c *claim) bool {
	return l.valid(c) && l.wait != nil && !l.recheck && len(l.wait) == 0
}

// stillWaits reads, after a poll interval in which the ledger's watch
// reported nothing (a watch on a frozen member is silent), whether what
// the ledger waits for is still there: the ledger's keys, keys only, in
// one linearizable read (pollRead; no write: TestWaiterIdleWritesNothing). Keys
// gone are taken out; a path key created again since is the new
// holder's. true if the ledger is still not empty; false if it is, or if
// no try got an answer (the attempt then reads first: recheck stays
// set). A ledger holds at most one queue key per earlier waiter and
// the claim's path keys; past MaxTxnOps of them only the first are read,
// and the rest wait for their deletes.
func (c *claim) stillWaits() bool {
	l := c.led
	keys := make([]string, 0, len(l.wait))
	for k := range l.wait {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = keys[:min(len(keys), MaxTxnOps)]
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k, clientv3.WithKeysOnly())
	}
	var r *clientv3.TxnResponse
	err := c.b.pollRead(func(ctx context.Context) (err error) {
		r, err = c.b.cli.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil || len(r.Responses) != len(keys) {
		return false
	}
	for i, k := range keys {
		if kvs := r.Responses[i].GetResponseRange().GetKvs(); len(kvs) > 0 {
			l.wait[k] = kvs[0].CreateRevision
		} else {
			delete(l.wait, k)
		}
	}
	l.recheck = false
	return len(l.wait) > 0
}

// dropLedger stops the ledger's watch and forgets it.
func (c *claim) dropLedger() {
	if c.led != nil {
		c.led.cancel()
		c.led = nil
	}
}

// openLedger starts the watch (deletes of the path keys and the queue,
// from now), then puts the claim's queue key (once per lease) and reads
// the queue and the path keys in the same transaction, and fills the
// ledger from that read. false if the watch did not start or the put
// failed: the claim then waits as a pool waiter does.
func (c *claim) openLedger() bool {
	c.stopWatch()
	from, to := c.b.waitRange()
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	ch := c.b.cli.Watch(ctx, from, clientv3.WithRange(to), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	t := time.NewTimer(AttemptTimeout)
	defer t.Stop()
	select {
	case wr, ok := <-ch:
		if !ok || wr.Err() != nil || !wr.Created {
			cancel()
			return false
		}
	case <-t.C:
		cancel()
		return false
	}
	reads := make([]clientv3.Op, 0, 1+len(c.keys))
	reads = append(reads, etcdclient.GetPrefix(c.b.queuePrefix()))
	for _, k := range c.keys {
		reads = append(reads, etcdclient.Get(k.key))
	}
	var resp *clientv3.TxnResponse
	var err error
	if c.queued() {
		err = c.b.do("read the queue", func(ctx context.Context) (err error) {
			resp, err = c.b.cli.Commit(ctx, new(etcdclient.Txn).Then(reads...))
			return err
		})
	} else if c.liveLease() {
		var key string
		var rev int64
		key, rev, resp, err = c.putQueueKey(c.lease, reads...)
		if err == nil {
			c.qkey, c.qrev, c.qlease, c.qchecked = key, rev, c.lease.id, false
			resp.Responses = resp.Responses[1:]
		}
	} else {
		err = errNoLease
	}
	if err != nil || len(resp.Responses) != len(reads) {
		cancel()
		return false
	}
	c.led = &ledger{lease: c.qlease, ch: ch, cancel: cancel}
	if be := c.judge(resp.Header.Revision, resp.Responses[0].GetResponseRange().GetKvs(), resp.Responses[1:], c.keys, nil); be != nil {
		c.busy = be
	}
	return true
}

// waitLedger is WaitChange for a claim that keeps a ledger: it returns
// once the ledger is empty (the claim then tries at once), when the poll
// ends (wctx: TryAcquire then reads, stillWaits), or when the watch
// ends. handled is false if the ledger
// could not be opened: the caller waits the other way.
func (c *claim) waitLedger(ctx, wctx context.Context) (handled bool, err error) {
	if c.led != nil && !c.led.valid(c) {
		c.dropLedger()
	}
	if c.led == nil && !c.openLedger() {
		return false, nil
	}
	l := c.led
	for l.wait == nil || len(l.wait) > 0 {
		select {
		case wr, ok := <-l.ch:
			if !ok || wr.Err() != nil {
				// The next attempt reads the queue and the keys first
				// (qchecked: its lock transaction is a write), and the
				// next wait opens a ledger again.
				c.dropLedger()
				c.qchecked = false
				return true, ctx.Err()
			}
			l.apply(wr.Events)
		case <-wctx.Done():
			l.recheck = true
			return true, ctx.Err()
		}
	}
	c.woke = true
	return true, ctx.Err()
}
