//go:build linux

package etcdclient

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Renew's errors besides ctx's.
var (
	// ErrLeaseGone: etcd says the lease does not exist (it expired, or
	// was revoked).
	ErrLeaseGone = errors.New("etcd says the lease has expired")
	// ErrRenewDeadline: no attempt was answered before the deadline.
	ErrRenewDeadline = errors.New("no renewal answered before the deadline")
)

// RenewAttempt bounds one renewal request of a lease of ttl: a tenth of
// the TTL, at least 300 ms (an answer on a healthy cluster takes a few
// milliseconds, a member under load may need more) and at most 1 s.
func RenewAttempt(ttl time.Duration) time.Duration {
	return min(max(ttl/10, 300*time.Millisecond), time.Second)
}

// Renew renews lease id (of ttl) once, for etcdlock's locks and
// etcdpause's period claims alike: a single keep-alive request (a stream
// of its own) sent with a short timeout, RenewAttempt, and sent again
// until it is answered or deadline passes. A request that gets no answer
// (a frozen or cut-off member, a broken connection) is sent again, and
// the next attempt goes to the next member in turn (the client's round
// robin) — long before the client would notice the dead connection
// itself (its keep-alive ping: 10 s, then 2 s for the answer). A renewal asks that the member have a
// leader (WithRequireLeader): a member cut off from the others says so at
// once, and the next attempt goes elsewhere. Any member can renew: a
// follower forwards the renewal to the leader, and once the others have
// elected a new one (1-2 s with etcd's defaults) it goes there.
//
// When deadline has passed before the first attempt — the process did not
// run meanwhile: it was stopped (SIGSTOP), or starved — one attempt is
// made all the same (late is then true): the lease may still live, and a
// lease that still lives never lost its keys.
//
// It returns when the answered request was sent, and how many attempts
// it took; or ErrLeaseGone, ErrRenewDeadline or ctx's error.
func (c *Client) Renew(ctx context.Context, id clientv3.LeaseID, ttl time.Duration, deadline time.Time) (sent time.Time, attempts int, late bool, err error) {
	for attempts = 1; ; attempts++ {
		left := time.Until(deadline)
		late = left <= 0 && attempts == 1
		if left <= 0 && !late {
			return time.Time{}, attempts - 1, false, ErrRenewDeadline
		}
		timeout := RenewAttempt(ttl)
		if !late {
			timeout = min(timeout, left)
		}
		sent = time.Now()
		actx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), timeout)
		_, err := c.KeepAliveOnce(actx, id)
		cancel()
		var pause time.Duration
		switch {
		case ctx.Err() != nil:
			return time.Time{}, attempts, late, ctx.Err()
		case err == nil:
			return sent, attempts, late, nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return time.Time{}, attempts, late, ErrLeaseGone
		case late:
			return time.Time{}, attempts, late, ErrRenewDeadline
		case !Ambiguous(err):
			// A definite refusal (permission denied, say): sending it
			// again changes nothing, but the lease may live on until
			// the deadline.
			pause = min(time.Until(deadline), 200*time.Millisecond)
		default:
			// No answer in time, a broken connection, no leader: the
			// next attempt goes to the next member. A pause, so that
			// attempts that fail at once do not spin.
			pause = 20 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return time.Time{}, attempts, late, ctx.Err()
		case <-time.After(pause):
		}
	}
}
