//go:build linux

package etcdlock

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/pathlock"
)

// Inspect implements lockset.Inspector (withlock who --backend etcd): one
// linearizable read of each path's key and of each pool's prefix, the
// holders taken from the keys' values (host, pid, command line, since
// when). It takes nothing and writes nothing; reads are retried until the
// Backend's timeout, and a cluster that does not answer is an error
// wrapping ErrUnavailable.
func (b *Backend) Inspect(r lockset.Request) (*lockset.Inspection, error) {
	in := &lockset.Inspection{}
	holding := map[int64]bool{} // leases of the path keys held: a holder keeps its queue key
	for _, p := range r.Paths {
		c, err := pathlock.Canonical(p)
		if err != nil {
			return nil, err
		}
		rel, err := b.Rel(c)
		if err != nil {
			return nil, err
		}
		ps := lockset.PathState{Given: p, Canonical: c, Lock: b.PathKey(rel), State: lockset.StateFree}
		var resp *clientv3.GetResponse
		if err := b.retry("read "+ps.Lock, func(ctx context.Context) (err error) {
			resp, err = b.cli.Get(ctx, ps.Lock)
			return err
		}); err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			if kv.Lease != 0 {
				holding[kv.Lease] = true
			}
			ps.State = lockset.StateHeld
			ps.Holders = append(ps.Holders, holderOf(kv.Value))
		}
		in.Paths = append(in.Paths, ps)
	}
	for _, spec := range r.Pools {
		prefix := b.PoolPrefix(spec.Template)
		var resp *clientv3.GetResponse
		if err := b.retry("read "+prefix, func(ctx context.Context) (err error) {
			resp, err = b.cli.Get(ctx, prefix, clientv3.WithPrefix())
			return err
		}); err != nil {
			return nil, err
		}
		pool := lockset.PoolState{Template: spec.Template, Size: spec.Size, Busy: true}
		held := map[int][]lockset.HolderInfo{}
		for _, kv := range resp.Kvs {
			if i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), prefix)); err == nil {
				held[i] = append(held[i], holderOf(kv.Value))
			}
		}
		for i := 0; i < spec.Size; i++ {
			s := lockset.SlotState{Slot: i, Lock: prefix + strconv.Itoa(i), State: lockset.StateFree}
			if hs := held[i]; len(hs) > 0 {
				s.State, s.Holders = lockset.StateHeld, hs
			}
			pool.Busy = pool.Busy && s.State == lockset.StateHeld
			pool.Slots = append(pool.Slots, s)
		}
		in.Pools = append(in.Pools, pool)
	}
	var q *clientv3.GetResponse
	if err := b.retry("read "+b.queuePrefix(), func(ctx context.Context) (err error) {
		q, err = b.cli.Get(ctx, b.queuePrefix(), clientv3.WithPrefix())
		return err
	}); err != nil {
		return nil, err
	}
	in.Queued = queuedFor(in, queueKVs(q.Kvs, holding), b.PoolPrefix)
	return in, nil
}

// queuedFor returns the earliest waiter of the queue kvs (in create
// revision order) that a withlock with the request of in would yield to
// (claim.ahead's rule, for a claim not queued itself): one whose set
// names one of in's path keys, else the first waiter for a pool of in
// whose reservations (one per listing of the pool's prefix, by every
// waiter) leave no more free slots than they reserve. poolPrefix names a
// pool's key prefix from its template.
func queuedFor(in *lockset.Inspection, kvs []*queueKV, poolPrefix func(string) string) *lockset.QueuedState {
	found := func(kv *queueKV, pool string) *lockset.QueuedState {
		h := lockset.HolderInfo{Pid: kv.v.PID, Host: safetext.Cut(kv.v.Host, 100), Command: safetext.Cut(kv.v.Cmd, 60)}
		h.Since, _ = time.Parse(time.RFC3339, kv.v.Since)
		return &lockset.QueuedState{Ticket: kv.key, Pool: pool, Waiter: h}
	}
	ids := make(map[string]bool, len(in.Paths))
	for _, p := range in.Paths {
		ids[shortID(p.Lock)] = true
	}
	for _, kv := range kvs {
		if kv.v.intersects(ids) {
			return found(kv, "")
		}
	}
	for _, p := range in.Pools {
		prefix := poolPrefix(p.Template)
		reserved := 0
		var first *queueKV
		for _, kv := range kvs {
			for _, listed := range kv.v.Pools {
				if listed == prefix {
					reserved++
					if first == nil {
						first = kv
					}
				}
			}
		}
		if reserved > 0 && p.Free() <= reserved {
			return found(first, p.Template)
		}
	}
	return nil
}

// holderOf reads a key's value: who took it. A value that is not one
// names nobody in particular.
func holderOf(data []byte) lockset.HolderInfo {
	var v value
	if json.Unmarshal(data, &v) != nil {
		return lockset.HolderInfo{}
	}
	h := lockset.HolderInfo{Pid: v.PID, Host: safetext.Cut(v.Host, 100), Command: safetext.Cut(v.Cmd, 60)}
	h.Since, _ = time.Parse(time.RFC3339, v.Since)
	return h
}
