package etcdclient

import (
	"context"

	pb "github.com/crongate/crongate/internal/etcdpb"
	clientv3 "github.com/crongate/crongate/internal/etcdv3"
)

// Txn is a transaction with comparisons, built as etcd's messages and
// sent by Client.Commit.
type Txn struct{ r pb.TxnRequest }

// If adds comparisons, all of which must hold for Then to apply.
func (t *Txn) If(cs ...*pb.Compare) *Txn { t.r.Compare = append(t.r.Compare, cs...); return t }

// Then adds the requests applied when the comparisons hold.
func (t *Txn) Then(ops ...*pb.RequestOp) *Txn { t.r.Success = append(t.r.Success, ops...); return t }

// Else adds the requests applied when they do not.
func (t *Txn) Else(ops ...*pb.RequestOp) *Txn { t.r.Failure = append(t.r.Failure, ops...); return t }

// Op is the transaction as a request of an enclosing one (which shares
// it: t is not to change after).
func (t *Txn) Op() *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &t.r}}
}

// Request is the transaction's message.
func (t *Txn) Request() *pb.TxnRequest { return &t.r }

// Commit sends t: not retried (a write may have applied).
func (c *Client) Commit(ctx context.Context, t *Txn) (*clientv3.TxnResponse, error) {
	var r pb.TxnResponse
	if err := c.Invoke(ctx, "/etcdserverpb.KV/Txn", &t.r, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CreateIs compares key's create revision with rev (0: absent).
func CreateIs(key string, rev int64) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_CreateRevision{CreateRevision: rev}}
}

// ModIs compares key's mod revision with rev (0: absent).
func ModIs(key string, rev int64) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_ModRevision{ModRevision: rev}}
}

// LeaseIs compares the lease key is put under with id.
func LeaseIs(key string, id clientv3.LeaseID) *pb.Compare {
	return &pb.Compare{Key: []byte(key), Target: pb.Compare_LEASE, Result: pb.Compare_EQUAL,
		TargetUnion: &pb.Compare_Lease{Lease: int64(id)}}
}

// Put puts key under lease (clientv3.NoLease: none).
func Put(key, val string, lease clientv3.LeaseID) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(val), Lease: int64(lease)}}}
}

// PutKeepLease puts key's value and leaves it under its lease.
func PutKeepLease(key, val string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(val), IgnoreLease: true}}}
}

// Get reads key.
func Get(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}
}

// GetPrefix reads the keys under prefix.
func GetPrefix(prefix string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(prefix), RangeEnd: []byte(clientv3.GetPrefixRangeEnd(prefix))}}}
}

// Delete deletes key.
func Delete(key string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(key)}}}
}
