package etcdclient

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Txn is a transaction built a piece at a time (etcdlock adds the
// comparisons and requests of many keys in loops) and sent by
// Client.Commit: the official client's comparisons and operations,
// gathered until sent.
type Txn struct {
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

// If adds comparisons, all of which must hold for Then to apply.
func (t *Txn) If(cs ...clientv3.Cmp) *Txn { t.cmps = append(t.cmps, cs...); return t }

// Then adds the requests applied when the comparisons hold.
func (t *Txn) Then(ops ...clientv3.Op) *Txn { t.then = append(t.then, ops...); return t }

// Else adds the requests applied when they do not.
func (t *Txn) Else(ops ...clientv3.Op) *Txn { t.els = append(t.els, ops...); return t }

// Op is the transaction as a request of an enclosing one.
func (t *Txn) Op() clientv3.Op { return clientv3.OpTxn(t.cmps, t.then, t.els) }

// Commit sends t: not retried (a write may have applied).
func (c *Client) Commit(ctx context.Context, t *Txn) (*clientv3.TxnResponse, error) {
	return c.Txn(ctx).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
}

// CreateIs compares key's create revision with rev (0: absent).
func CreateIs(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(key), "=", rev)
}

// ModIs compares key's mod revision with rev (0: absent).
func ModIs(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}

// LeaseIs compares the lease key is put under with id.
func LeaseIs(key string, id clientv3.LeaseID) clientv3.Cmp {
	return clientv3.Compare(clientv3.LeaseValue(key), "=", id)
}

// Put puts key under lease (clientv3.NoLease: none).
func Put(key, val string, lease clientv3.LeaseID) clientv3.Op {
	return clientv3.OpPut(key, val, clientv3.WithLease(lease))
}

// PutKeepLease puts key's value and leaves it under its lease.
func PutKeepLease(key, val string) clientv3.Op {
	return clientv3.OpPut(key, val, clientv3.WithIgnoreLease())
}

// Get reads key.
func Get(key string) clientv3.Op { return clientv3.OpGet(key) }

// GetPrefix reads the keys under prefix.
func GetPrefix(prefix string) clientv3.Op { return clientv3.OpGet(prefix, clientv3.WithPrefix()) }

// Delete deletes key.
func Delete(key string) clientv3.Op { return clientv3.OpDelete(key) }
