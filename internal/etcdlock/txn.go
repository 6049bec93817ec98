//go:build linux

package etcdlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// errResend marks a transaction whose outcome was unknown and that was not
// found applied when read back; TryAcquire fences it and tries again.
var errResend = errors.New("lock transaction timed out and was not applied when read back")

// resendError is errResend with the transaction's error, whose message is
// made only when it is shown: an Unavailable's message waits (up to a
// second) for the diagnosis of its cause, and TryAcquire fences and tries
// again without showing it.
type resendError struct{ err error }

func (e *resendError) Error() string { return errResend.Error() + ": " + e.err.Error() }

func (e *resendError) Unwrap() []error { return []error{errResend, e.err} }

// attempt runs the transactions of one try.
func (c *claim) attempt(deadline time.Time) (*held, error) {
	c.busyKey, c.busyPrefix, c.busyEnd, c.busyRev, c.busyQueue = "", false, "", 0, false
	slots := make([]int, len(c.pools))
	cands := make([][]int, len(c.pools))
	chainLen := 0
	for i := range c.pools {
		p := &c.pools[i]
		switch {
		case p.shared:
			if cands[i] != nil {
				break // dealt with the template's first occurrence
			}
			if err := c.dealSlots(i, cands); err != nil {
				return nil, err
			}
		case p.size <= maxChain:
			cands[i] = seq(p.size)
		default:
			free, rev, err := c.freeSlots(p, p.size)
			if err != nil {
				return nil, err
			}
			if len(free) == 0 {
				c.busyKey, c.busyPrefix, c.busyRev = p.prefix, true, rev
				return nil, c.poolBusy(p, nil)
			}
			cands[i] = free[:min(len(free), maxChain)]
		}
	}
	for i := range cands {
		chainLen = max(chainLen, len(cands[i]))
	}
	// The first transaction holds the pools and as many paths as fit.
	chunks := chunkKeys(c.keys, max(MaxTxnOps-len(c.pools)-chainLen, 0))
	var rev int64
	for ci, ch := range chunks {
		var pools []pool
		var pc [][]int
		if ci == 0 {
			pools, pc = c.pools, cands
		}
		d := deadline
		if ci > 0 {
			d = time.Now().Add(c.b.rto) // each further chunk gets its own budget
		}
		r, err := c.txn(ch, pools, pc, d)
		if err != nil {
			return nil, err
		}
		if r.busy != nil {
			r.busy.partial = r.busy.partial || ci > 0 || (r.busy.pool && len(c.keys)+len(c.pools) > 1)
			if ci > 0 || !r.busy.partial {
				r.busy.undo = nil // earlier transactions put keys too, or nothing was put
			}
			return nil, r.busy
		}
		if ci == 0 {
			copy(slots, r.slots)
		}
		rev = r.rev
	}
	h := &held{c: c, lease: c.lease, rev: rev, slots: slots}
	return h, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// dealSlots finds the candidates of every occurrence of the template of
// pool first (its first occurrence in the request) and puts them in cands.
//
// The local backend takes one slot per occurrence: each occurrence locks
// a slot file of its own, and a flock conflicts with the same process's
// other open file descriptions, so `--slots 4 --slot-file T` given twice
// takes two distinct slots of T's pool (a job that counts twice). Here one
// transaction cannot put a key twice (etcd refuses it: "duplicate key given
// in txn request"), so the occurrences' chains must be disjoint: the pool is
// read, occurrence j (in request order) is dealt the j-th lowest free slot
// below its own size, as the local backend would take it, and the other
// free slots are dealt round-robin as fall-backs (at most maxChain each).
// Fewer free slots than occurrences is busy, with nothing put. A holder that
// takes every slot dealt to one occurrence before the transaction makes it
// busy too; TryAcquire then reads and deals again (maxRedeals).
func (c *claim) dealSlots(first int, cands [][]int) error {
	p := &c.pools[first]
	var occ []int
	size := 0
	for i := first; i < len(c.pools); i++ {
		if c.pools[i].prefix == p.prefix {
			occ = append(occ, i)
			size = max(size, c.pools[i].size)
		}
	}
	free, rev, err := c.freeSlots(p, size)
	if err != nil {
		return err
	}
	dealt := make([]bool, len(free))
	for _, i := range occ {
		j := 0
		for j < len(free) && dealt[j] {
			j++
		}
		if j == len(free) || free[j] >= c.pools[i].size {
			c.busyKey, c.busyPrefix, c.busyRev = p.prefix, true, rev
			return c.poolBusy(&c.pools[i], nil)
		}
		dealt[j] = true
		cands[i] = []int{free[j]}
	}
	next := 0
	for j, f := range free {
		if dealt[j] {
			continue
		}
		for range occ {
			i := occ[next]
			next = (next + 1) % len(occ)
			if f < c.pools[i].size && len(cands[i]) < maxChain {
				cands[i] = append(cands[i], f)
				break
			}
		}
	}
	return nil
}

// freeSlots reads a pool and returns its free indices below size, in
// order.
func (c *claim) freeSlots(p *pool, size int) ([]int, int64, error) {
	var resp *clientv3.GetResponse
	err := c.b.retry("read pool "+p.template, func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Get(ctx, p.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	taken := map[int]bool{}
	for _, kv := range resp.Kvs {
		if i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p.prefix)); err == nil {
			taken[i] = true
		}
	}
	var free []int
	for i := 0; i < size; i++ {
		if !taken[i] {
			free = append(free, i)
		}
	}
	return free, resp.Header.Revision, nil
}

type txnResult struct {
	rev   int64
	slots []int
	busy  *BusyError
}

// txn takes the path keys of one chunk and one slot of each pool in one
// transaction:
//
//	If   create_revision(path_k) == 0 for every path
//	Then put path_k (lease) ..., chain(pool_1), chain(pool_2), ...
//	Else get path_k ...                      (who holds what, for the message)
//
//	chain(pool) = If create_revision(slot_c1) == 0 Then put slot_c1
//	              Else If create_revision(slot_c2) == 0 Then put slot_c2
//	              Else ... Else get pool/ (prefix)
//
// A pool whose chain ends in the final Else is full: the transaction has
// then put the paths and other pools' slots, which the caller revokes.
func (c *claim) txn(keys []pathKey, pools []pool, cands [][]int, deadline time.Time) (txnResult, error) {
	lease := c.lease.id
	t := &etcdclient.Txn{}
	for _, k := range keys {
		t.If(etcdclient.CreateIs(k.key, 0)).Then(etcdclient.Put(k.key, k.val, lease)).Else(etcdclient.Get(k.key))
	}
	for i := range pools {
		t.Then(c.chain(&pools[i], cands[i], 0))
	}
	var resp *clientv3.TxnResponse
	err := c.b.doFor("lock transaction", max(min(time.Until(deadline), AttemptTimeout), 500*time.Millisecond), func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Commit(ctx, t)
		return err
	})
	if err != nil {
		if !ambiguous(err) {
			if errors.Is(err, rpctypes.ErrTooManyOps) {
				return txnResult{}, fmt.Errorf("the etcd cluster refuses a transaction of %d keys: withlock-etcd needs --max-txn-ops of at least %d on the etcd members (%v)", len(keys)+len(pools), MaxTxnOps, err)
			}
			return txnResult{}, err
		}
		// The transaction timed out or the connection broke: it may
		// have been applied. Read the keys back and decide by lease; if
		// it does not show, TryAcquire fences it (errResend).
		c.b.Rereads.Add(1)
		res, applied, rerr := c.reread(keys, pools, cands, deadline)
		if rerr != nil {
			return txnResult{}, fmt.Errorf("%w (and reading it back: %v)", err, rerr)
		}
		if applied {
			return res, nil
		}
		return txnResult{}, &resendError{err}
	}
	res := txnResult{rev: resp.Header.Revision, slots: make([]int, len(pools))}
	if !resp.Succeeded {
		for i, r := range resp.Responses {
			if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				if rr.Kvs[0].Lease == int64(lease) {
					// Held by this very lease: an earlier attempt
					// applied after all. Never wait on oneself.
					return txnResult{}, fmt.Errorf("%w: a key is already held under this lease", errResend)
				}
				c.busyKey, c.busyRev = keys[i].key, resp.Header.Revision
				c.led.hold(keys[i].key, rr.Kvs[0].CreateRevision)
				res.busy = &BusyError{What: keys[i].canon, Key: keys[i].key, Holders: holders(rr.Kvs)}
				return res, nil
			}
		}
		// A key was busy at the compare but gone by the gets (same
		// revision, so impossible); report it generically.
		res.busy = &BusyError{What: "a path", Key: keys[0].key}
		return res, nil
	}
	for i := range pools {
		r := resp.Responses[len(keys)+i].GetResponseTxn()
		for j := 0; ; j++ {
			if r.Succeeded {
				res.slots[i] = cands[i][j]
				break
			}
			next := r.Responses[0]
			if rr := next.GetResponseRange(); rr != nil {
				c.busyKey, c.busyPrefix, c.busyRev = pools[i].prefix, true, resp.Header.Revision
				res.busy = c.poolBusy(&pools[i], rr.Kvs)
				res.busy.dealt = pools[i].shared
				break
			}
			r = next.GetResponseTxn()
		}
		if res.busy != nil {
			res.busy.undo = putKeys(keys, pools, cands, resp)
			return res, nil
		}
	}
	return res, nil
}

// putKeys lists the keys a transaction that found a pool full put: its
// path keys and the slot of every pool whose chain succeeded.
func putKeys(keys []pathKey, pools []pool, cands [][]int, resp *clientv3.TxnResponse) []string {
	put := make([]string, 0, len(keys)+len(pools))
	for _, k := range keys {
		put = append(put, k.key)
	}
	for i := range pools {
		r := resp.Responses[len(keys)+i].GetResponseTxn()
		for j := 0; r != nil && j < len(cands[i]); j++ {
			if r.Succeeded {
				put = append(put, pools[i].slotKey(cands[i][j]))
				break
			}
			r = r.Responses[0].GetResponseTxn()
		}
	}
	return put
}

// undo deletes the keys a busy transaction put under the claim's lease
// (BusyError.undo), in one transaction that requires each still under it,
// so that a queued claim keeps its lease and with it its queue key and
// place. false if that was not done: the caller then revokes the lease.
func (c *claim) undo(put []string) bool {
	t := &etcdclient.Txn{}
	for _, k := range put {
		t.If(etcdclient.LeaseIs(k, c.lease.id)).Then(etcdclient.Delete(k))
	}
	var resp *clientv3.TxnResponse
	err := c.b.do("give back a busy attempt's keys", func(ctx context.Context) (err error) {
		resp, err = c.b.cli.Commit(ctx, t)
		return err
	})
	if err != nil || !resp.Succeeded {
		return false
	}
	if c.busyPrefix {
		// Our own deletes are no release to wake for.
		c.busyRev = max(c.busyRev, resp.Header.Revision)
	}
	return true
}

func (c *claim) chain(p *pool, cands []int, j int) clientv3.Op {
	i := cands[j]
	k := p.slotKey(i)
	t := new(etcdclient.Txn).If(etcdclient.CreateIs(k, 0)).Then(etcdclient.Put(k, p.value(c.b.cfg.Holder, i), c.lease.id))
	if j == len(cands)-1 {
		return t.Else(etcdclient.GetPrefix(p.prefix)).Op()
	}
	return t.Else(c.chain(p, cands, j+1)).Op()
}

// reread decides a transaction whose outcome is unknown: its keys are read
// back (a read is safe to retry) and compared with the lease. The
// transaction was atomic, so either every key it put carries the lease or
// none does. applied is false when it was not applied: nothing of it is
// held and it may be sent again. A pool's slot is the key under the lease
// among its candidates (the occurrences of a shared pool have disjoint
// candidates, see dealSlots).
func (c *claim) reread(keys []pathKey, pools []pool, cands [][]int, deadline time.Time) (res txnResult, applied bool, err error) {
	lease := int64(c.lease.id)
	ops := make([]clientv3.Op, 0, len(keys)+len(pools))
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k.key))
	}
	for _, p := range pools {
		ops = append(ops, clientv3.OpGet(p.prefix, clientv3.WithPrefix()))
	}
	var resp *clientv3.TxnResponse
	for {
		left := time.Until(deadline)
		err = c.b.doFor("read back the lock transaction", max(min(left, AttemptTimeout), 500*time.Millisecond), func(ctx context.Context) (err error) {
			resp, err = c.b.cli.Txn(ctx).Then(ops...).Commit()
			return err
		})
		if err == nil || !errors.Is(err, ErrUnavailable) || left < 200*time.Millisecond {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return res, false, err
	}
	res.slots = make([]int, len(pools))
	mine := 0
	var rev int64
	for i := range keys {
		for _, kv := range resp.Responses[i].GetResponseRange().Kvs {
			if kv.Lease == lease {
				mine++
				rev = max(rev, kv.CreateRevision)
			}
		}
	}
	gotPools := 0
	for i, p := range pools {
		res.slots[i] = -1
		for _, kv := range resp.Responses[len(keys)+i].GetResponseRange().Kvs {
			if kv.Lease == lease {
				if n, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p.prefix)); err == nil && slices.Contains(cands[i], n) {
					res.slots[i] = n
					rev = max(rev, kv.CreateRevision)
					gotPools++
				}
			}
		}
	}
	switch {
	case mine == 0 && gotPools == 0:
		// Not applied (or applied and busy, which put nothing).
		return res, false, nil
	case mine == len(keys) && gotPools == len(pools):
		// Applied, and every pool had a free slot.
		res.rev = rev
		return res, true, nil
	}
	// Applied with a pool full: busy; the caller revokes what was put.
	for i, s := range res.slots {
		if s < 0 {
			res.busy = c.poolBusy(&pools[i], nil)
			break
		}
	}
	if res.busy == nil {
		res.busy = &BusyError{What: "a path", Key: keys[0].key}
	}
	res.busy.partial = true
	return res, true, nil
}

func (c *claim) poolBusy(p *pool, kvs []*mvccpb.KeyValue) *BusyError {
	unit := "slots"
	if p.size == 1 {
		unit = "slot"
	}
	return &BusyError{What: fmt.Sprintf("slot pool %s (%d %s)", p.template, p.size, unit), Key: p.prefix, Holders: holders(kvs), pool: true}
}

func holders(kvs []*mvccpb.KeyValue) []string {
	var hs []string
	for _, kv := range kvs {
		var v value
		if json.Unmarshal(kv.Value, &v) != nil {
			hs = append(hs, fmt.Sprintf("lease %x", kv.Lease))
			continue
		}
		hs = append(hs, describe(v.Holder, v.Since))
	}
	return hs
}

// chunkKeys cuts keys into the transactions that take them: the first
// holds at most first paths, every one at most MaxTxnOps, and none more
// than MaxTxnBytes of keys and values (the first always at least one
// path, unless first is 0).
func chunkKeys(keys []pathKey, first int) [][]pathKey {
	chunks := [][]pathKey{}
	limit := first
	for {
		n, size := 0, 0
		for n < min(limit, len(keys)) {
			cost := 3*len(keys[n].key) + len(keys[n].val) + 32
			if n > 0 && size+cost > MaxTxnBytes {
				break
			}
			size += cost
			n++
		}
		chunks = append(chunks, keys[:n])
		keys = keys[n:]
		if len(keys) == 0 {
			return chunks
		}
		limit = MaxTxnOps
	}
}
