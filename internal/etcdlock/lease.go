//go:build linux

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/etcdclient"

	"github.com/crongate/crongate/internal/lockset"
)

// lease is one holder's etcd lease, kept alive from the moment it is
// granted until it is revoked. Its deadlines are counted from the moment the
// request that last (re)started it was sent, which is never after the
// cluster's own renewal: TERM at 3/4 of the TTL and KILL at 9/10 leave the
// last tenth, at least, before the lease can expire on the cluster.
type lease struct {
	id     clientv3.LeaseID
	cancel context.CancelFunc
	lost   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	renewed time.Time     // when the request of the last confirmed renewal was sent
	ttl     time.Duration // the holder's deadlines are counted on it (Config.TTL)
	reason  string

	revokeErr error // the last revoke's failure, if any
	revoked   bool
}

// grant creates a lease and starts keeping it alive.
func grant(b *Backend) (*lease, error) {
	var resp *clientv3.LeaseGrantResponse
	sent := time.Now()
	err := b.retry("grant lease", func(ctx context.Context) (err error) {
		sent = time.Now()
		resp, err = b.cli.Grant(ctx, b.ttl)
		return err
	})
	if err != nil {
		// A grant that timed out may have created a lease nobody keeps
		// alive: it expires by itself after the TTL, holding no key.
		return nil, err
	}
	b.track(resp.ID)
	// The members' versions are read once per process, alongside the
	// rest, now that the client's connections are up.
	if !b.cfg.NoVersions {
		b.checked.Do(func() { b.versions = etcdclient.CheckVersions(b.cli, b.rto) })
	}
	l := &lease{
		id:      resp.ID,
		lost:    make(chan struct{}),
		renewed: sent,
		ttl:     b.cfg.TTL,
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.keep(ctx, b)
	return l, nil
}

// keep renews the lease every third of its TTL until ctx ends, and closes
// lost when etcd says the lease is gone, or when 3/4 of the TTL have passed
// since the last confirmed renewal.
//
// Each renewal is a single keep-alive request (a stream of its own) sent
// with a short timeout, renewAttempt, and sent again until it is answered or
// the 3/4-TTL deadline passes. The client sends every new request to the
// next member in turn (its balancer is round robin over the members that
// are connected), so a request stuck on a frozen or cut-off member is sent
// again to another one after etcdclient.RenewAttempt — long before the client would
// notice the dead connection itself (gRPC keep-alive: about 6 s). Any member
// can renew: a follower forwards the renewal to the leader, and once the
// others have elected a new leader (about 1-2 s after the old one froze,
// with etcd's defaults) it goes there. With the default TTL of 10 s a
// renewal that meets a fault has more than 4 s to find a member that
// answers.
//
// A renewal asks that the member have a leader (WithRequireLeader): a
// member cut off from the others says so at once instead of waiting,
// and the request goes to the next one.
func (l *lease) keep(ctx context.Context, b *Backend) {
	for {
		l.mu.Lock()
		next := l.renewed.Add(l.ttl / 3)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		if !l.renew(ctx, b) {
			return
		}
	}
}

// renew renews the lease once (etcdclient.Client.Renew: sent again, to
// the next member, until answered); false when the lease is lost or ctx
// ended.
//
// When the deadline has passed before the first attempt — this process did
// not run meanwhile: it was stopped (SIGSTOP), or starved — one attempt is
// made all the same: the lease may still live, for up to TTL + lock delay
// after the last renewal, and a lease that still lives has never lost its
// keys (a lease that expired is gone for good), so nobody else can have
// taken them, and the command goes on. Only a lease that etcd says is gone,
// or no answer, stops it.
func (l *lease) renew(ctx context.Context, b *Backend) bool {
	l.mu.Lock()
	last := l.renewed
	l.mu.Unlock()
	sent, attempts, late, err := b.cli.Renew(ctx, l.id, l.ttl, last.Add(l.ttl*3/4))
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, etcdclient.ErrLeaseGone):
		l.markLost("etcd says the lease has expired")
		return false
	case err != nil:
		l.lostByTime()
		return false
	}
	gap := sent.Sub(last)
	// Said before the renewal is recorded: a command that ended
	// meanwhile waits for the record (KillBy) before withlock exits.
	if late {
		l.say(b.cfg.Warnf, "the lease was renewed %v after the last renewal, past the %v deadline (this process was stopped or starved): it had not expired, so the locks were kept throughout",
			gap.Round(time.Millisecond), (l.ttl * 3 / 4))
	} else if attempts > 1 {
		l.say(b.cfg.Infof, "lease renewed %v after the last renewal, at attempt %d (a member did not answer)", gap.Round(time.Millisecond), attempts)
	}
	l.mu.Lock()
	l.renewed = sent
	l.mu.Unlock()
	return true
}

func (l *lease) say(f func(string, ...any), format string, args ...any) {
	if f != nil {
		f(format, args...)
	}
}

func (l *lease) lostByTime() {
	l.mu.Lock()
	since, ttl := time.Since(l.renewed).Round(time.Millisecond), l.ttl
	l.mu.Unlock()
	l.markLost(fmt.Sprintf("the lease was not renewed for %v (TTL %v): etcd unreachable or too slow", since, ttl))
}

func (l *lease) markLost(reason string) {
	l.once.Do(func() {
		l.mu.Lock()
		l.reason = reason
		l.mu.Unlock()
		close(l.lost)
	})
}

func (l *lease) isLost() bool {
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// revoke stops the renewals and revokes the lease, which deletes every key
// put under it, within the operation's timeout (Config.Timeout): a revoke
// that gets no answer is sent again, to the next member, in attempts of
// revokeAttempt (a revoke is safe to repeat: a lease that is gone is what
// it wants; short attempts let a release through within about one
// election when the member it went to, or the leader, froze). If no
// attempt is answered in time, revokeErr says so, and the keys go when the
// lease expires, one TTL after its last renewal at most.
func (l *lease) revoke(b *Backend) {
	if l.revoked {
		return
	}
	l.revokeConfirmed(b, time.Now().Add(b.rto))
}

// revokeAttempt bounds one attempt of a revoke: a third of AttemptTimeout,
// as a waiter's reads (pollRead).
const revokeAttempt = AttemptTimeout / 3

// revokeConfirmed revokes the lease and retries until etcd confirms it (or
// says the lease is gone already), or deadline passes.
func (l *lease) revokeConfirmed(b *Backend, deadline time.Time) error {
	l.revoked = true
	l.cancel()
	for {
		left := time.Until(deadline)
		err := b.doFor("revoke lease", revokeAttempt, func(ctx context.Context) error {
			_, err := b.cli.Revoke(ctx, l.id)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				err = nil // expired already: nothing is held
			}
			if err == nil {
				b.untrack(l.id)
			}
			return err
		})
		if err == nil || !errors.Is(err, ErrUnavailable) || left < 200*time.Millisecond {
			if ue, ok := errors.AsType[*etcdclient.Unavailable](err); ok {
				ue.Took = b.rto
			}
			l.revokeErr = err
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// held is a granted claim.
type held struct {
	c        *claim
	lease    *lease
	rev      int64
	slots    []int
	released bool
	started  func() // Started's work, nil if none
}

func (h *held) Paths() []string { return h.c.canon }

// RelPaths returns the held paths relative to the key root, in the order of
// Paths: the names other hosts know them by.
func (h *held) RelPaths() []string {
	rel := make([]string, len(h.c.canon))
	idx := make(map[string]string, len(h.c.keys))
	for _, k := range h.c.keys {
		idx[k.canon] = k.rel
	}
	for i, p := range h.c.canon {
		rel[i] = idx[p]
	}
	return rel
}

func (h *held) Slots() []int { return h.slots }

// Files is nil: etcd locks are not descriptors a command could inherit.
func (h *held) Files() []*os.File { return nil }

func (h *held) Lost() <-chan struct{} { return h.lease.lost }

// Release revokes the lease (deleting every key) once.
func (h *held) Release() {
	if h.released {
		return
	}
	h.Started()
	h.released = true
	h.lease.revoke(h.c.b)
	if h.c.lease == h.lease {
		h.c.lease = nil
	}
}

// Started implements lockset.Started: what is left to do once the command
// has started (a --first-of waiter leaving the queue). Release does it
// too.
func (h *held) Started() {
	if f := h.started; f != nil {
		h.started = nil
		f()
	}
}

// Lease is the lease ID: the first half of the fencing token.
func (h *held) Lease() int64 { return int64(h.lease.id) }

// Revision is the etcd revision at which the whole set became held: the
// create_revision of the keys, strictly greater than any earlier holder's.
func (h *held) Revision() int64 { return h.rev }

// KillBy is the latest moment the command may still run: 9/10 of the TTL
// after the last confirmed renewal, before the cluster can expire the lease.
func (h *held) KillBy() time.Time {
	h.lease.mu.Lock()
	defer h.lease.mu.Unlock()
	return h.lease.renewed.Add(h.lease.ttl * 9 / 10)
}

// LostReason says why Lost was closed.
func (h *held) LostReason() string {
	h.lease.mu.Lock()
	defer h.lease.mu.Unlock()
	return h.lease.reason
}

// ReleaseErr is the error of the revoke done by Release, if any (the keys
// then expire with the lease).
func (h *held) ReleaseErr() error { return h.lease.revokeErr }

// TTL is the longest the keys outlive this process or a release that
// failed: the lease's TTL, Config.TTL + Config.LockDelay.
func (h *held) TTL() time.Duration { return time.Duration(h.c.b.ttl) * time.Second }

// Fenced is what an etcd Held offers beyond lockset.Leased: the fencing
// token and the names other hosts know the paths by (docs/etcd.md, "The fencing
// contract").
type Fenced interface {
	lockset.Leased
	// Lease is the lease ID: the first half of the fencing token.
	Lease() int64
	// Revision is the etcd revision at which the whole set became held,
	// strictly greater than any earlier holder's of any of its keys.
	Revision() int64
	// RelPaths returns the held paths relative to the key root, in the
	// order of Paths.
	RelPaths() []string
}

var _ Fenced = (*held)(nil)
