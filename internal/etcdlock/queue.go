//go:build linux

package etcdlock

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/safetext"
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
// no waiter's proceeds at once. A waiter's key stays while it holds its
// set and goes with its lease, at release, or when it stops waiting (its
// lease revoked); a waiter that dies (SIGKILL) leaves the queue when its
// lease expires, TTL + lock delay after its last renewal. A queue key
// whose lease holds one of the path keys read with it is a holder's, and
// the held key answers for it (judge); the waiters behind a holder are
// woken once, by its release (ledger.go). With pools, the key goes once
// the holder's command has started (dequeueLater).
//
// Slot pools: a waiter reserves a slot of each pool it waits for (the
// value lists the key prefix of each pool an attempt found full or
// yielded for, for as long as the waiter waits for slots only, none while
// it waits for a path: queueValue.Pools, setReserve; a waiter with pools
// but no paths queues too). For each pool P of a
// claim, k earlier waiters' listings of P make the set busy while P's free
// slots (the claim's size for P minus the slot keys held below it, read in
// the same read) are no more than k: newcomers yield when the free slots
// would not cover the earlier waiters' reservations, so the earliest
// waiter for a pool takes the next slot freed. A --first-of waiter's key
// for its first set lists no pool; while its pool is full it is queued
// for the pool as a plain claim is.

// maxQueued bounds the set a waiter queues: its key's value lists 17 bytes
// per path, and etcd refuses a request above 1.5 MiB. A larger set waits
// unqueued, as before fair waiting.
const maxQueued = 50000

// queueValue is a queue key's value: who waits, and for which paths, each
// named by the first 16 hex digits of its path key's hash (a collision
// only makes a set yield when it need not).
//
// Pools lists the key prefix (PoolPrefix) of each pool the waiter
// reserves a slot of (setReserve). Each entry reserves one slot of that
// pool (ahead); a value written by hand may list one several times.
// Older binaries ignore the field.
type queueValue struct {
	Holder
	Since string   `json:"since"`
	Keys  []string `json:"keys"`
	Pools []string `json:"pools,omitempty"`
	// Keeps: the waiter has no pools, so it keeps its queue key while
	// it holds its set (ledger.go), and a key of its set held under the
	// queue key's lease means it holds (judge). A waiter with pools can
	// hold path keys for a moment while it waits (a transaction that
	// found a pool full puts them, then deletes them to keep its
	// place): its key never says so. Older binaries write no Keeps.
	Keeps bool `json:"keeps,omitempty"`
}

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
// claim's current lease, not known to be lost). A waiter stopped past its
// lease's end (SIGSTOP, a frozen VM) lost its key with the lease; once it
// runs again and its renewal finds the lease gone, it is no longer
// queued, and the next WaitChange queues it again (at the back).
func (c *claim) queued() bool {
	return c.qrev > 0 && c.lease != nil && c.lease.id == c.qlease && !c.lease.isLost()
}

// ahead returns the busy answer for the first live queue key (in create
// revision order) that was created before the claim's own (any, if the
// claim is not queued) and names one of its paths; nil if none. rev is the
// revision of the read. What WaitChange then watches is the last such key,
// the claim's nearest predecessor among the waiters it yields to: each
// waiter is woken by one leaving, not every waiter by the head leaving.
//
// Then the pools: taken is the number of slot keys held in each of the
// claim's pools (by prefix, indices below the claim's size for it), read
// with the queue; nil skips the pool rule. For a pool P, k earlier waiters
// whose keys list P (counting repeats) reserve k of its slots: if the free
// slots are no more than k, the set is busy, left to the earliest of them.
// WaitChange then watches those waiters' keys and P's slots (poolWake).
func (c *claim) ahead(kvs []*queueKV, rev int64, taken map[string]int) *BusyError {
	ids := c.ids()
	wants := c.poolWants()
	var first, last *queueKV
	var k map[string]int
	var pfirst map[string]*queueKV
	c.poolsAhead, c.poolWake = false, nil
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
		if len(wants) > 0 {
			// An earlier waiter that reserves no pool of ours now may
			// reserve one after its next attempt: keep reading.
			c.poolsAhead = true
		}
		for _, p := range kv.v.Pools {
			if _, ok := wants[p]; !ok {
				continue
			}
			if k == nil {
				k, pfirst, c.poolWake = map[string]int{}, map[string]*queueKV{}, map[string]bool{}
			}
			k[p]++
			if pfirst[p] == nil {
				pfirst[p] = kv
			}
			c.poolWake[kv.key] = true
		}
	}
	if first != nil {
		c.busyKey, c.busyPrefix, c.busyEnd, c.busyRev, c.busyQueue = last.key, false, "", rev, true
		return &BusyError{What: "an earlier waiter", Key: first.key, Holders: []string{describe(first.v.Holder, first.v.Since)}, queued: true}
	}
	if k == nil || taken == nil {
		return nil
	}
	for i := range c.pools {
		p := &c.pools[i]
		w := wants[p.prefix]
		if k[p.prefix] == 0 || w.size-taken[p.prefix] > k[p.prefix] {
			continue
		}
		// Woken by a slot of the claim's pools freed or by an earlier
		// waiter for one of them leaving: the range from the queue to
		// the end of the slots holds both.
		c.busyKey, c.busyPrefix, c.busyEnd, c.busyRev, c.busyQueue = c.b.queuePrefix(), false, clientv3.GetPrefixRangeEnd(SlotsPrefix(c.b.cfg.Prefix)), rev, true
		c.busyPool = p.prefix
		kv := pfirst[p.prefix]
		return &BusyError{What: "an earlier waiter for slot pool " + p.template, Key: kv.key, Holders: []string{describe(kv.v.Holder, kv.v.Since)}, queued: true, slotPool: p.template}
	}
	return nil
}

// poolWant is what a claim wants of one pool: its template and its size
// (the largest given for the template).
type poolWant struct {
	template string
	size     int
}

// poolWants returns the claim's pools by key prefix.
func (c *claim) poolWants() map[string]poolWant {
	if c.wants == nil && len(c.pools) > 0 {
		c.wants = make(map[string]poolWant, len(c.pools))
		for _, p := range c.pools {
			w := c.wants[p.prefix]
			w.template, w.size = p.template, max(w.size, p.size)
			c.wants[p.prefix] = w
		}
	}
	return c.wants
}

// poolWakes reports whether the delete of key may let the claim in when
// it waits behind earlier waiters for its pools: a slot of one of its
// pools, or the queue key of one of those waiters.
func (c *claim) poolWakes(key string) bool {
	if c.poolWake[key] {
		return true
	}
	for _, p := range c.pools {
		if strings.HasPrefix(key, p.prefix) {
			return true
		}
	}
	return false
}

// countTaken counts the slot keys of pool prefix among kvs whose index is
// below size.
func countTaken(prefix string, size int, kvs []*mvccpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		if i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), prefix)); err == nil && i >= 0 && i < size {
			n++
		}
	}
	return n
}

// queueKV is a queue key as read: its name, create revision and value.
type queueKV struct {
	key string
	rev int64
	v   queueValue
}

// queueKVs turns the range of the queue prefix into queue keys in create
// revision order, skipping values that are not queue values, and the keys
// of holders: those that keep their key while they hold (Keeps) and whose
// lease is in holding (the leases of path keys read with the queue).
func queueKVs(kvs []*mvccpb.KeyValue, holding map[int64]bool) []*queueKV {
	var q []*queueKV
	for _, kv := range kvs {
		v, ok := parseQueueValue(kv.Value)
		if !ok || v.Keeps && holding[kv.Lease] {
			continue // not a queue value, or a holder's key (judge)
		}
		q = append(q, &queueKV{key: string(kv.Key), rev: kv.CreateRevision, v: v})
	}
	slices.SortFunc(q, func(a, b *queueKV) int { return cmp.Compare(a.rev, b.rev) })
	return q
}

// precheck reads the queue, the claim's pools (their slot keys, keys
// only) and its path keys (the first MaxTxnOps-1 ops' worth) in one
// linearizable read, and returns the busy answer for an earlier waiter
// whose set intersects the claim's or who reserves the free slots of one
// of its pools (first), or for a path key held; nil if none (or the read
// got no answer in time: the lock transaction decides then). It puts
// nothing: a set found busy this way costs the cluster no write. A claim
// without pools reads no pool.
func (c *claim) precheck() *BusyError {
	var pools []string
	for _, p := range c.pools {
		if len(pools) < MaxTxnOps-1 && !slices.Contains(pools, p.prefix) {
			pools = append(pools, p.prefix)
		}
	}
	keys := c.keys[:min(len(c.keys), MaxTxnOps-1-len(pools))]
	ops := make([]clientv3.Op, 0, 1+len(pools)+len(keys))
	ops = append(ops, clientv3.OpGet(c.b.queuePrefix(), clientv3.WithPrefix()))
	for _, p := range pools {
		ops = append(ops, clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithKeysOnly()))
	}
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k.key))
	}
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	resp, err := c.b.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil
	}
	var taken map[string]int
	if len(pools) > 0 {
		wants := c.poolWants()
		taken = make(map[string]int, len(pools))
		for i, p := range pools {
			taken[p] = countTaken(p, wants[p].size, resp.Responses[1+i].GetResponseRange().GetKvs())
		}
	}
	return c.judge(resp.Header.Revision, resp.Responses[0].GetResponseRange().GetKvs(), resp.Responses[1+len(pools):], keys, taken)
}

// judge decides a read, at revision rev, of the queue (queue) and of the
// first len(keys) of the claim's path keys (reads[i] is keys[i]'s range):
// the busy answer for an earlier waiter (ahead), else for a path key
// held; nil if none. A queue key whose lease holds one of these path
// keys, and whose value says that its waiter keeps it while it holds
// (queueValue.Keeps), is its holder's, not a waiter's: the held key
// answers for it. taken is as for ahead. A
// claim that keeps a ledger (ledger.go) takes from the read what it
// waits for.
func (c *claim) judge(rev int64, queue []*mvccpb.KeyValue, reads []*pb.ResponseOp, keys []pathKey, taken map[string]int) *BusyError {
	var holding map[int64]bool
	for _, r := range reads {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 && kvs[0].Lease != 0 {
			if holding == nil {
				holding = map[int64]bool{}
			}
			holding[kvs[0].Lease] = true
		}
	}
	q := queueKVs(queue, holding)
	be := c.ahead(q, rev, taken)
	if c.queued() && rev >= c.qrev {
		// Read since the claim entered the queue: no waiter can come
		// ahead of it any more. Earlier waiters for its pools still
		// count at every try (their reservations depend on the free
		// slots), so with one of them it reads the queue every time.
		c.qchecked = !c.poolsAhead
		if len(keys) == len(c.keys) {
			c.led.take(c, q, reads)
		}
	}
	if be != nil {
		return be
	}
	for i, r := range reads {
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
			if c.lease != nil && kvs[0].Lease == int64(c.lease.id) {
				return nil // ours: the transaction sorts it out
			}
			c.busyKey, c.busyPrefix, c.busyEnd, c.busyRev, c.busyQueue = keys[i].key, false, "", rev, false
			return &BusyError{What: keys[i].canon, Key: keys[i].key, Holders: holders(kvs)}
		}
	}
	return nil
}

// prechecks reports whether the claim reads the queue before an attempt:
// it has paths or pools.
func (c *claim) prechecks() bool { return len(c.keys) > 0 || len(c.pools) > 0 }

// enqueue puts the claim's queue key under its lease (granting one if the
// last was revoked), once per lease. A set without paths or pools, or with
// more than maxQueued paths, is not queued. An enqueue that fails leaves the claim
// waiting unqueued; the next WaitChange tries again.
func (c *claim) enqueue() {
	if c.queued() || !c.prechecks() || len(c.keys) > maxQueued || !c.liveLease() {
		return
	}
	key, rev, _, err := c.putQueueKey(c.lease)
	if err != nil {
		return
	}
	c.qkey, c.qrev, c.qlease, c.qchecked = key, rev, c.lease.id, false
}

// liveLease grants the claim a lease if it has none or its last was
// lost (revoked then); false if the grant failed.
func (c *claim) liveLease() bool {
	if c.lease != nil && !c.lease.isLost() {
		return true
	}
	if c.lease != nil {
		c.lease.revoke(c.b)
	}
	l, err := c.b.newLease()
	if err != nil {
		c.lease = nil
		return false
	}
	c.lease = l
	return true
}

// putQueueKey puts a queue key for the claim's set under lease l, and
// returns it with its create revision, and the transaction's answer: its
// header, then the key's put or read, then the answers to reads, read in
// the same transaction right after it (they see the key).
func (c *claim) putQueueKey(l *lease, reads ...clientv3.Op) (key string, rev int64, read *clientv3.TxnResponse, err error) {
	c.qsince = time.Now().UTC().Format(time.RFC3339)
	data := c.queueData()
	key = fmt.Sprintf("%s%016x", c.b.queuePrefix(), int64(l.id))
	// Put only if absent, else read it: a put that timed out may have
	// been applied, and a second put would leave the key at its first
	// create revision while the answer gave the second, misplacing us in
	// the queue. The key is ours alone (named by our lease).
	err = c.b.retry("enter the queue", func(ctx context.Context) error {
		r, err := c.b.cli.Commit(ctx, new(etcdclient.Txn).If(etcdclient.CreateIs(key, 0)).
			Then(etcdclient.Put(key, string(data), l.id)).Then(reads...).
			Else(etcdclient.Get(key)).Else(reads...))
		switch {
		case err != nil:
			return err
		case len(r.Responses) != 1+len(reads):
			return fmt.Errorf("queue key %s: %d answers to %d requests", key, len(r.Responses), 1+len(reads))
		case r.Succeeded:
			rev = r.Header.Revision
		case len(r.Responses[0].GetResponseRange().GetKvs()) == 1:
			rev = r.Responses[0].GetResponseRange().Kvs[0].CreateRevision
		default:
			return fmt.Errorf("queue key %s neither absent nor readable", key)
		}
		read = r
		return nil
	})
	if err != nil {
		return "", 0, nil, err
	}
	c.qreserve = slices.Clone(c.reserve)
	return key, rev, read, nil
}

// queueData is the claim's queue value: its paths, and the pools it
// reserves a slot of.
func (c *claim) queueData() []byte {
	v := queueValue{Holder: c.b.cfg.Holder, Since: c.qsince, Keys: make([]string, 0, len(c.keys))}
	for _, k := range c.keys {
		v.Keys = append(v.Keys, shortID(k.key))
	}
	v.Pools = c.reserve
	v.Keeps = len(c.pools) == 0
	data, _ := json.Marshal(v)
	return data
}

// setReserve records, after a failed attempt, the pools the claim
// reserves a slot of: the pool found full or that earlier waiters are
// queued for is added, and those it reserved already stay (a waiter for
// two pools that come free in turn would otherwise see each taken by a
// newcomer while it waits for the other); none once it waits for a path
// or for a waiter on its paths. A queued claim whose queue value says
// otherwise rewrites it (one put, its lease and create revision kept, so
// its place too); a put that fails is tried again after the next attempt.
func (c *claim) setReserve() {
	switch {
	case c.busyEnd != "":
		c.reserve = c.addPool(c.reserve, c.busyPool)
	case c.busyPrefix:
		c.reserve = c.addPool(c.reserve, c.busyKey)
	default:
		c.reserve = nil
	}
	if !c.queued() || slices.Equal(c.reserve, c.qreserve) {
		return
	}
	data := c.queueData()
	err := c.b.do("update the queue", func(ctx context.Context) error {
		r, err := c.b.cli.Commit(ctx, new(etcdclient.Txn).If(etcdclient.CreateIs(c.qkey, c.qrev)).
			Then(etcdclient.PutKeepLease(c.qkey, string(data))))
		if err == nil && r.Succeeded {
			c.qreserve = slices.Clone(c.reserve)
		}
		return err
	})
	_ = err // the next attempt tries again
}

// addPool adds the pool prefix p to the reservations ps (sorted), once
// per occurrence of the pool in the claim: the same --slot-file given
// twice needs (and reserves) two of its slots. A pool already in ps is
// left as it is.
func (c *claim) addPool(ps []string, p string) []string {
	i, found := slices.BinarySearch(ps, p)
	if found {
		return ps
	}
	for _, q := range c.pools {
		if q.prefix == p {
			ps = slices.Insert(ps, i, p)
		}
	}
	return ps
}

// needsCheck reports whether the next attempt must read the queue first
// (precheck). A queued waiter that has read the queue since it entered
// it, and that waits for a path key rather than for an earlier waiter,
// need not: no waiter can enter ahead of it, so it goes straight to the
// lock transaction when the key is released. Nor need a claim whose
// ledger is empty (ledger.go).
func (c *claim) needsCheck() bool {
	if c.led.ready(c) {
		return false // its ledger is empty: nothing to wait for (ledger.go)
	}
	return !(c.queued() && c.qchecked && !c.busyQueue && c.busyKey != "")
}

// dequeueLater returns what deletes the queue key of a claim with pools
// that has taken its set, once its command has started (held.Started):
// its key would go only with the lease, at release, and its pool
// reservations would make newcomers yield meanwhile. (The lock
// transaction cannot delete it: it applies its other operations even
// when a pool in it is full, and the waiter would lose its place without
// getting in.) A claim without pools keeps its key until release
// (ledger.go). nil if there is nothing to delete.
func (c *claim) dequeueLater() func() {
	if !c.queued() || len(c.pools) == 0 {
		return nil
	}
	key, rev := c.qkey, c.qrev
	return func() {
		c.b.do("leave the queue", func(ctx context.Context) error {
			_, err := c.b.cli.Commit(ctx, new(etcdclient.Txn).If(etcdclient.CreateIs(key, rev)).Then(etcdclient.Delete(key)))
			return err
		})
	}
}

// readQueue reads the live waiters (for --first-of, which checks every
// candidate set against them; its own queue key names its first set only)
// and the revision of the read; nil and 0 if the read got no answer in
// time. It reads the held path keys (keys only) with the queue, to leave
// out the queue keys of holders (judge).
func (b *Backend) readQueue() ([]*queueKV, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	resp, err := b.cli.Txn(ctx).Then(
		clientv3.OpGet(b.queuePrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(PathsPrefix(b.cfg.Prefix), clientv3.WithPrefix(), clientv3.WithKeysOnly())).Commit()
	if err != nil || len(resp.Responses) != 2 {
		return nil, 0
	}
	_, q := b.splitWaitRange(append(resp.Responses[1].GetResponseRange().GetKvs(), resp.Responses[0].GetResponseRange().GetKvs()...))
	return q, resp.Header.Revision
}

// splitWaitRange splits a read of waitRange into the held path keys (by
// key) and the queue, in create revision order, without the queue keys
// of holders (queueKVs).
func (b *Backend) splitWaitRange(kvs []*mvccpb.KeyValue) (held map[string]bool, q []*queueKV) {
	held = make(map[string]bool, len(kvs))
	holding := map[int64]bool{}
	var queued []*mvccpb.KeyValue
	for _, kv := range kvs {
		if strings.HasPrefix(string(kv.Key), b.queuePrefix()) {
			queued = append(queued, kv)
			continue
		}
		held[string(kv.Key)] = true
		if kv.Lease != 0 {
			holding[kv.Lease] = true
		}
	}
	return held, queueKVs(queued, holding)
}

// describe names the holder of a key (or the waiter of a queue key) for
// a message. The value is outside input — any process that may write the
// prefix wrote it — so each field is cut (a holder writes its command
// line cut to 200 characters already) and made one line.
func describe(h Holder, since string) string {
	var s string
	switch host := safetext.Cut(h.Host, 100); {
	case h.PID > 0 && host != "":
		s = fmt.Sprintf("pid %d on %s", h.PID, host)
	case h.PID > 0:
		s = fmt.Sprintf("pid %d", h.PID)
	case host != "":
		s = "a process on " + host
	default:
		s = "a process its key does not name"
	}
	if h.Cmd != "" {
		s += " (" + safetext.Cut(h.Cmd, 200) + ")"
	}
	if since != "" {
		s += " since " + safetext.Cut(since, 40)
	}
	return s
}
