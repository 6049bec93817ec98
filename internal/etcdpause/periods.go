//go:build linux

package etcdpause

// once_per across hosts: a period's key, PREFIX/periods/GATE/PERIOD, is
// created under the claimer's lease (kept alive while its run goes on),
// replaced by a done mark under a lease of its own when the run succeeds,
// and deleted with the lease when it fails or the claimer dies.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/etcdclient"
)

// PeriodKey is the key of gate's period (gate.Period.Key) under prefix.
func PeriodKey(prefix, gateName, period string) string {
	return prefix + "/periods/" + gateName + "/" + period
}

// Values of a period key: "claimed by HOLDER", "done by HOLDER".
const (
	claimedBy = "claimed by "
	doneBy    = "done by "
)

var _ gate.PeriodClaims = (*Store)(nil)

// ClaimPeriod implements gate.PeriodClaims: one transaction creates the
// period's key under a new lease if it does not exist, else reads it. A
// call that cannot tell whether it got the key (no answer) revokes its
// lease, which deletes the key if it was made, and returns
// ErrUnavailable: the run skips, and the next call finds the period free.
func (s *Store) ClaimPeriod(ctx context.Context, gateName, period, holder string, ttl time.Duration) (gate.PeriodClaim, string, error) {
	key := PeriodKey(s.cfg.Prefix, gateName, period)
	var lease clientv3.LeaseID
	var sent time.Time
	err := s.retry(ctx, "grant the period's lease", func(ctx context.Context) error {
		sent = time.Now()
		l, err := s.cli.Grant(ctx, leaseTTL(ttl))
		if err == nil {
			lease = l.ID
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	s.answered()
	var got *clientv3.TxnResponse
	err = s.retry(ctx, "claim the period", func(ctx context.Context) error {
		r, err := s.cli.Commit(ctx, new(etcdclient.Txn).
			If(etcdclient.CreateIs(key, 0)).
			Then(etcdclient.Put(key, claimedBy+holder, lease)).
			Else(etcdclient.Get(key)))
		if err == nil {
			got = r
		}
		return err
	})
	if err != nil {
		s.revoke(lease)
		return nil, "", err
	}
	if !got.Succeeded {
		// A retried transaction whose first try landed finds the key
		// under its own lease: it is ours. Anything else is another's
		// (holders are for people; the lease says whose a key is).
		rr := got.Responses[0].GetResponseRange()
		if rr == nil || len(rr.Kvs) == 0 {
			s.revoke(lease)
			return nil, "claimed (the key vanished as it was read)", nil
		}
		if clientv3.LeaseID(rr.Kvs[0].Lease) != lease {
			s.revoke(lease)
			return nil, string(rr.Kvs[0].Value), nil
		}
	}
	c := &periodClaim{s: s, key: key, holder: holder, lease: lease, lost: make(chan struct{})}
	kctx, cancel := context.WithCancel(context.Background())
	c.stopKeep = cancel
	go c.keep(kctx, ttl, sent)
	return c, "", nil
}

// keep renews the claim's lease as withlock-etcd renews its locks'
// (etcdclient.Client.Renew; docs/etcd.md, "A frozen or cut-off member"):
// every third of the TTL, each request sent again, to the next member in
// turn, until it is answered. The claim is lost (Lost) when etcd says the
// lease is gone, or once 3/4 of the TTL have passed since the request of
// the last confirmed renewal (renewed): the run then stops its command
// (TERM, and KILL at 9/10 of the TTL: gate.ClaimKillAfter), before the
// lease can expire and another host claim the period. (The client's own
// keep-alive stream stayed on the member it started on until gRPC
// noticed that member frozen, about 6 s, and lost claims a quorum would
// have renewed.) A process stopped past the deadline tries once when it
// wakes: a lease that still lives was never claimed by another host.
func (c *periodClaim) keep(ctx context.Context, ttl time.Duration, renewed time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(renewed.Add(ttl / 3))):
		}
		sent, _, _, err := c.s.cli.Renew(ctx, c.lease, ttl, renewed.Add(ttl*3/4))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.lose()
			return
		}
		renewed = sent
	}
}

// lose closes Lost, unless the claim was ended (released or done).
func (c *periodClaim) lose() {
	if !c.ended.Load() {
		c.lostOnce.Do(func() { close(c.lost) })
	}
}

// periodClaim is a held claim.
type periodClaim struct {
	s        *Store
	key      string
	holder   string
	lease    clientv3.LeaseID
	lost     chan struct{}
	lostOnce sync.Once
	ended    atomic.Bool
	stopKeep context.CancelFunc
}

func (c *periodClaim) Lost() <-chan struct{} { return c.lost }

// Done replaces the claim by a done mark under a lease of keep, only
// while the key is still under the claim's lease, then drops the claim's
// lease.
func (c *periodClaim) Done(ctx context.Context, keep time.Duration) error {
	defer c.Release()
	var doneLease clientv3.LeaseID
	err := c.s.retry(ctx, "grant the done mark's lease", func(ctx context.Context) error {
		l, err := c.s.cli.Grant(ctx, leaseTTL(keep))
		if err == nil {
			doneLease = l.ID
		}
		return err
	})
	if err != nil {
		return err
	}
	var ok bool
	err = c.s.retry(ctx, "mark the period done", func(ctx context.Context) error {
		r, err := c.s.cli.Commit(ctx, new(etcdclient.Txn).
			If(etcdclient.LeaseIs(c.key, c.lease)).
			Then(etcdclient.Put(c.key, doneBy+c.holder, doneLease)).
			Else(etcdclient.Get(c.key)))
		if err != nil {
			return err
		}
		ok = r.Succeeded
		if !ok {
			// A retry whose first try landed finds its own mark (under
			// the done lease).
			if rr := r.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 && clientv3.LeaseID(rr.Kvs[0].Lease) == doneLease {
				ok = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		c.s.revoke(doneLease)
		return errors.New("the claim's lease was lost before the period could be marked done")
	}
	return nil
}

// Release stops the keep-alives and revokes the claim's lease, which
// deletes the claim (not a done mark, which has a lease of its own).
func (c *periodClaim) Release() {
	if c.ended.Swap(true) {
		return
	}
	c.stopKeep()
	c.s.revoke(c.lease)
}
