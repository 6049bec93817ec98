package clientv3

import (
	"context"

	pb "github.com/crongate/crongate/internal/etcdpb"
)

// LeaseID is a lease's ID; NoLease is none.
type LeaseID int64

const NoLease LeaseID = 0

// Op is one request of a transaction.
type Op = *pb.RequestOp

// OpOption modifies a request: a range, a watch.
type OpOption func(*op)

type op struct {
	end          []byte
	prefix       bool
	rev          int64
	keysOnly     bool
	prevKV       bool
	filterPut    bool
	createdNotif bool
}

func (o *op) apply(key string, opts []OpOption) {
	for _, f := range opts {
		f(o)
	}
	if o.prefix {
		o.end = []byte(GetPrefixRangeEnd(key))
	}
}

// WithPrefix makes the request cover every key that starts with the key.
func WithPrefix() OpOption { return func(o *op) { o.prefix = true } }

// WithRange makes the request cover the keys [key, end).
func WithRange(end string) OpOption { return func(o *op) { o.end = []byte(end) } }

// WithRev reads at a revision, or starts a watch there.
func WithRev(rev int64) OpOption { return func(o *op) { o.rev = rev } }

// WithKeysOnly reads keys without their values.
func WithKeysOnly() OpOption { return func(o *op) { o.keysOnly = true } }

// WithPrevKV makes a watch's events carry the key as it was before.
func WithPrevKV() OpOption { return func(o *op) { o.prevKV = true } }

// WithFilterPut leaves puts out of a watch.
func WithFilterPut() OpOption { return func(o *op) { o.filterPut = true } }

// WithCreatedNotify delivers a watch's "created" answer on its channel.
func WithCreatedNotify() OpOption { return func(o *op) { o.createdNotif = true } }

// GetPrefixRangeEnd is the end of the range of keys that start with
// prefix: the prefix with its last byte below 0xff incremented, "\x00"
// (every key) if there is none.
func GetPrefixRangeEnd(prefix string) string {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return "\x00"
}

// OpGet reads key (with WithPrefix or WithRange: a range of keys).
func OpGet(key string, opts ...OpOption) Op {
	var o op
	o.apply(key, opts)
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{
		Key: []byte(key), RangeEnd: o.end, Revision: o.rev, KeysOnly: o.keysOnly}}}
}

// GetResponse is a read's answer.
type GetResponse = pb.RangeResponse

// TxnResponse is a transaction's answer.
type TxnResponse = pb.TxnResponse

// Get reads key, or a range of keys.
func (c *Client) Get(ctx context.Context, key string, opts ...OpOption) (*GetResponse, error) {
	r := OpGet(key, opts...).Request.(*pb.RequestOp_RequestRange).RequestRange
	var resp pb.RangeResponse
	if err := c.Invoke(ctx, "/etcdserverpb.KV/Range", r, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Txn is a transaction being built: Then's requests, applied as one.
type Txn struct {
	c   *Client
	ctx context.Context
	r   pb.TxnRequest
}

// Txn starts a transaction.
func (c *Client) Txn(ctx context.Context) *Txn { return &Txn{c: c, ctx: ctx} }

// Then adds requests.
func (t *Txn) Then(ops ...Op) *Txn { t.r.Success = append(t.r.Success, ops...); return t }

// Commit sends the transaction.
func (t *Txn) Commit() (*TxnResponse, error) {
	var resp pb.TxnResponse
	if err := t.c.Invoke(t.ctx, "/etcdserverpb.KV/Txn", &t.r, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// LeaseGrantResponse is a granted lease.
type LeaseGrantResponse struct {
	*pb.ResponseHeader
	ID  LeaseID
	TTL int64
}

// Grant asks for a lease of ttl seconds.
func (c *Client) Grant(ctx context.Context, ttl int64) (*LeaseGrantResponse, error) {
	var resp pb.LeaseGrantResponse
	if err := c.Invoke(ctx, "/etcdserverpb.Lease/LeaseGrant", &pb.LeaseGrantRequest{TTL: ttl}, &resp); err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, EtcdError{code: Unknown, desc: resp.Error}
	}
	return &LeaseGrantResponse{ResponseHeader: resp.Header, ID: LeaseID(resp.ID), TTL: resp.TTL}, nil
}

// Revoke ends a lease and deletes its keys.
func (c *Client) Revoke(ctx context.Context, id LeaseID) (*pb.LeaseRevokeResponse, error) {
	var resp pb.LeaseRevokeResponse
	if err := c.Invoke(ctx, "/etcdserverpb.Lease/LeaseRevoke", &pb.LeaseRevokeRequest{ID: int64(id)}, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// KeepAliveOnce renews a lease once: a keep-alive stream with one request
// and its answer. ErrLeaseNotFound when the lease is gone.
func (c *Client) KeepAliveOnce(ctx context.Context, id LeaseID) (*pb.LeaseKeepAliveResponse, error) {
	var resp pb.LeaseKeepAliveResponse
	if err := c.Invoke(ctx, "/etcdserverpb.Lease/LeaseKeepAlive", &pb.LeaseKeepAliveRequest{ID: int64(id)}, &resp); err != nil {
		return nil, err
	}
	if resp.TTL <= 0 {
		return nil, ErrLeaseNotFound
	}
	return &resp, nil
}

// Status asks the member at endpoint (any member the client is connected
// to, for "") for its status.
func (c *Client) Status(ctx context.Context, endpoint string) (*pb.StatusResponse, error) {
	var resp pb.StatusResponse
	if err := c.call(ctx, endpoint, "/etcdserverpb.Maintenance/Status", &pb.StatusRequest{}, &resp); err != nil {
		return nil, ContextError(ctx, err)
	}
	return &resp, nil
}
