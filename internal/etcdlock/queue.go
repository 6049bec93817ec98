//go:build linux

package etcdlock

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The waiting queue of the etcd backend (docs/withlock.md, "Fair
// waiting"), the same rule as the local backend's tickets: a withlock
// that waits (--wait) for a path set and finds it busy puts a queue key
//
//	PREFIX/queue/<lease id, 16 hex digits>
//
// under its own lease (the one its locks will be put under), whose value
// names its set (queueValue). Waiters are ordered by the key's create
// revision. Before every attempt a withlock reads the queue together with
// its path keys, in one read (precheck): a live queue key that was created
// before its own (every queue key, for a withlock that is not queued) and
// names one of its paths makes the set busy, so a newcomer whose set
// intersects an earlier waiter's yields to it, while a set that intersects
// no waiter's proceeds at once. A waiter's key goes when it takes its set
// (deleted in the same transaction) or stops waiting (its lease revoked);
// a waiter that dies (SIGKILL) leaves the queue when its lease expires,
// TTL + lock delay after its last renewal. Slot pools are not queued.

// maxQueued bounds the set a waiter queues: its key's value lists 17 bytes
// per path, and etcd refuses a request above 1.5 MiB. A larger set waits
// unqueued, as before fair waiting.
const maxQueued = 50000

// queueValue is a queue key's value: who waits, and for which paths, each
// named by the first 16 hex digits of its path key's hash (a collision
// only makes a set yield when it need not).
type queueValue struct {
	Holder
	Since string   `json:"since"`
	Keys  []string `json:"keys"`
}

// QueuePrefix is the key prefix of the waiting queue under prefix.
func QueuePrefix(prefix string) string { return prefix + "/queue/" }

func (b *Backend) queuePrefix() string { return QueuePrefix(b.cfg.Prefix) }

// shortID is the queue's name of a path key: the first 16 hex digits of
// its hash.
func shortID(key string) string {
	id := key[strings.LastIndexByte(key, '/')+1:]
	return id[:min(len(id), 16)]
}

// ids returns the claim's path keys as the queue names them.
func (c *claim) ids() map[string]bool {
	if c.idset == nil {
		c.idset = make(map[string]bool, len(c.keys))
		for _, k := range c.keys {
			c.idset[shortID(k.key)] = true
		}
	}
	return c.idset
}

// parseQueueValue reads a queue key's value (written by any process that
// can write the prefix: outside input). ok is false for a value that is
// not a queue value; such a key is ignored.
func parseQueueValue(data []byte) (v queueValue, ok bool) {
	if json.Unmarshal(data, &v) != nil {
		return queueValue{}, false
	}
	return v, true
}

// intersects reports whether the queue value v names one of ids.
func (v *queueValue) intersects(ids map[string]bool) bool {
	for _, k := range v.Keys {
		if ids[k] {
			return true
		}
	}
	return false
}

// queued reports whether the claim's queue key lives (put under the
// claim's current lease).
func (c *claim) queued() bool {
	return c.qrev > 0 && c.lease != nil && c.lease.id == c.qlease
}

// ahead returns the busy answer for the first live queue key (in create
// revision order) that was created before the claim's own (any, if the
// claim is not queued) and names one of its paths; nil if none. rev is the
// revision of the read. What WaitChange then watches is the last such key,
// the claim's nearest predecessor among the waiters it yields to: each
// waiter is woken by one leaving, not every waiter by the head leaving.
func (c *claim) ahead(kvs []*queueKV, rev int64) *BusyError {
	ids := c.ids()
	var first, last *queueKV
	for _, kv := range kvs {
		if kv.key == c.qkey && c.queued() {
			continue
		}
		if c.queued() && kv.rev >= c.qrev {
			break
		}
		if kv.v.intersects(ids) {
			if first == nil {
				first = kv
			}
			last = kv
		}
	}
	if first == nil {
		return nil
	}
	c.busyKey, c.busyPrefix, c.busyRev, c.busyQueue = last.key, false, rev, true
	return &BusyError{What: "an earlier waiter", Key: first.key, Holders: []string{describe(first.v.Holder, first.v.Since)}, queued: true}
}

// queueKV is a queue key as read: its name, create revision and value.
type queueKV struct {
	key string
	rev int64
	v   queueValue
}

// queueKVs turns the range of the queue prefix into queue keys in create
// revision order, skipping values that are not queue values.
func queueKVs(kvs []*mvccpb.KeyValue) []*queueKV {
	var q []*queueKV
	for _, kv := range kvs {
		if v, ok := parseQueueValue(kv.Value); ok {
			q = append(q, &queueKV{key: string(kv.Key), rev: kv.CreateRevision, v: v})
		}
	}
	slices.SortFunc(q, func(a, b *queueKV) int { return cmp.Compare(a.rev, b.rev) })
	return q
}

// precheck reads the queue and the claim's path keys (the first
// MaxTxnOps-1 of them) in one linearizable read, and returns the busy
// answer for an earlier waiter whose set intersects the claim's (first)
// or for a path key held; nil if neither (or the read got no answer in
// time: the lock transaction decides then). It puts nothing: a set found
// busy this way costs the cluster no write.
func (c *claim) precheck() *BusyError {
	keys := c.keys[:min(len(c.keys), MaxTxnOps-1)]
	ops := make([]clientv3.Op, 0, len(keys)+1)
	ops = append(ops, clientv3.OpGet(c.b.queuePrefix(), clientv3.WithPrefix()))
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k.key))
	}
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	resp, err := c.b.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil
	}
	rev := resp.Header.Revision
	if c.queued() && rev >= c.qrev {
		c.qchecked = true
	}
	if be := c.ahead(queueKVs(resp.Responses[0].GetResponseRange().Kvs), rev); be != nil {
		return be
	}
	for i, r := range resp.Responses[1:] {
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			if c.lease != nil && rr.Kvs[0].Lease == int64(c.lease.id) {
				return nil // ours: the transaction sorts it out
			}
			c.busyKey, c.busyPrefix, c.busyRev, c.busyQueue = keys[i].key, false, rev, false
			return &BusyError{What: keys[i].canon, Key: keys[i].key, Holders: holders(rr.Kvs)}
		}
	}
	return nil
}

// enqueue puts the claim's queue key under its lease (granting one if the
// last was revoked), once per lease. A set without paths, or larger than
// maxQueued, is not queued. An enqueue that fails leaves the claim
// waiting unqueued; the next WaitChange tries again.
func (c *claim) enqueue() {
	if c.queued() || len(c.keys) == 0 || len(c.keys) > maxQueued {
		return
	}
	if c.lease == nil || c.lease.isLost() {
		if c.lease != nil {
			c.lease.revoke(c.b)
		}
		l, err := c.b.newLease()
		if err != nil {
			c.lease = nil
			return
		}
		c.lease = l
	}
	key, rev, err := c.putQueueKey(c.lease)
	if err != nil {
		return
	}
	c.qkey, c.qrev, c.qlease, c.qchecked = key, rev, c.lease.id, false
}

// putQueueKey puts a queue key for the claim's set under lease l, and
// returns it with its create revision.
func (c *claim) putQueueKey(l *lease) (key string, rev int64, err error) {
	v := queueValue{Holder: c.b.cfg.Holder, Since: time.Now().UTC().Format(time.RFC3339), Keys: make([]string, 0, len(c.keys))}
	for _, k := range c.keys {
		v.Keys = append(v.Keys, shortID(k.key))
	}
	data, _ := json.Marshal(v)
	key = fmt.Sprintf("%s%016x", c.b.queuePrefix(), int64(l.id))
	// Put only if absent, else read it: a put that timed out may have
	// been applied, and a second put would leave the key at its first
	// create revision while the answer gave the second, misplacing us in
	// the queue. The key is ours alone (named by our lease).
	err = c.b.retry("enter the queue", func(ctx context.Context) error {
		r, err := c.b.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(data), clientv3.WithLease(l.id))).
			Else(clientv3.OpGet(key)).Commit()
		switch {
		case err != nil:
			return err
		case r.Succeeded:
			rev = r.Header.Revision
		case len(r.Responses) == 1 && len(r.Responses[0].GetResponseRange().Kvs) == 1:
			rev = r.Responses[0].GetResponseRange().Kvs[0].CreateRevision
		default:
			return fmt.Errorf("queue key %s neither absent nor readable", key)
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return key, rev, nil
}

// needsCheck reports whether the next attempt must read the queue first
// (precheck). A queued waiter that has read the queue since it entered
// it, and that waits for a path key rather than for an earlier waiter,
// need not: no waiter can enter ahead of it, so it goes straight to the
// lock transaction when the key is released.
func (c *claim) needsCheck() bool {
	return !(c.queued() && c.qchecked && !c.busyQueue && c.busyKey != "")
}

// dequeueOp is the delete of the claim's queue key, for the transaction
// that takes its set; nil if it is not queued.
func (c *claim) dequeueOp() []clientv3.Op {
	if !c.queued() {
		return nil
	}
	return []clientv3.Op{clientv3.OpDelete(c.qkey)}
}

// readQueue reads the live waiters (for --first-of, which checks every
// candidate set against them; its own queue key names its first set only)
// and the revision of the read; nil and 0 if the read got no answer in
// time.
func (b *Backend) readQueue() ([]*queueKV, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	resp, err := b.cli.Get(ctx, b.queuePrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0
	}
	return queueKVs(resp.Kvs), resp.Header.Revision
}

func describe(h Holder, since string) string {
	s := fmt.Sprintf("pid %d on %s", h.PID, h.Host)
	if h.Cmd != "" {
		s += " (" + h.Cmd + ")"
	}
	if since != "" {
		s += " since " + since
	}
	return s
}
