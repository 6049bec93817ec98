//go:build linux

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/internal/lockset"
)

// lease is one holder's etcd lease, kept alive from the moment it is
// granted until it is revoked. Its deadlines are counted from the moment the
// request that (re)started it was sent (grant) or its answer arrived
// (keep-alive), which is never before the cluster's own renewal by more than
// one network delay: TERM at 3/4 of the TTL and KILL at 9/10 leave that
// delay plenty of room before the lease can expire on the cluster.
type lease struct {
	id     clientv3.LeaseID
	cancel context.CancelFunc
	lost   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	renewed time.Time
	ttl     time.Duration
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
	l := &lease{
		id:      resp.ID,
		lost:    make(chan struct{}),
		renewed: sent,
		ttl:     time.Duration(resp.TTL) * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.monitor(ctx, b)
	return l, nil
}

// monitor keeps the lease alive through the client's keep-alive and closes
// lost when the lease is gone or at risk: 3/4 of the TTL after the last
// confirmed renewal.
func (l *lease) monitor(ctx context.Context, b *Backend) {
	t := time.NewTimer(l.lostIn())
	defer t.Stop()
	for {
		ch, err := b.cli.KeepAlive(ctx, l.id)
		if err != nil {
			l.markLost("lease keep-alive could not start: " + err.Error())
			return
		}
		if !l.follow(ctx, ch, t) {
			return
		}
		// The client closed the channel without our asking. It does so
		// when etcd says the lease is gone, but also when an answer is
		// late (a frozen member, an election), while the lease may well
		// live on: ask etcd, and keep the lease alive again if it does.
		for {
			if ctx.Err() != nil {
				return
			}
			var ttl *clientv3.LeaseTimeToLiveResponse
			err := b.doFor("lease time-to-live", min(max(l.lostIn(), 100*time.Millisecond), AttemptTimeout), func(c context.Context) (err error) {
				ttl, err = b.cli.TimeToLive(c, l.id)
				return err
			})
			if err == nil && ttl.TTL <= 0 {
				l.markLost("etcd says the lease has expired")
				return
			}
			if err == nil {
				break
			}
			select {
			case <-t.C:
				l.lostByTime()
				return
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// follow reads keep-alive answers until the channel closes (true) or the
// lease is lost or released (false).
func (l *lease) follow(ctx context.Context, ch <-chan *clientv3.LeaseKeepAliveResponse, t *time.Timer) bool {
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				return ctx.Err() == nil
			}
			if r.TTL <= 0 {
				l.markLost("etcd says the lease has expired")
				return false
			}
			l.mu.Lock()
			l.renewed, l.ttl = time.Now(), time.Duration(r.TTL)*time.Second
			l.mu.Unlock()
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(l.lostIn())
		case <-t.C:
			l.lostByTime()
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (l *lease) lostByTime() {
	l.mu.Lock()
	since, ttl := time.Since(l.renewed).Round(time.Millisecond), l.ttl
	l.mu.Unlock()
	l.markLost(fmt.Sprintf("the lease was not renewed for %v (TTL %v): etcd unreachable or too slow", since, ttl))
}

func (l *lease) lostIn() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Until(l.renewed.Add(l.ttl * 3 / 4))
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

// revoke stops the keep-alive and revokes the lease, which deletes every key
// put under it. If the cluster does not answer, the keys go when the lease
// expires, one TTL after its last renewal at most.
func (l *lease) revoke(b *Backend) {
	if l.revoked {
		return
	}
	l.revoked = true
	l.cancel()
	l.revokeErr = b.do("revoke lease", func(ctx context.Context) error {
		_, err := b.cli.Revoke(ctx, l.id)
		if err != nil && strings.Contains(err.Error(), "requested lease not found") {
			return nil // expired already: nothing is held
		}
		return err
	})
}

// revokeConfirmed revokes the lease and retries until etcd confirms it (or
// says the lease is gone already), or deadline passes.
func (l *lease) revokeConfirmed(b *Backend, deadline time.Time) error {
	l.revoked = true
	l.cancel()
	for {
		left := time.Until(deadline)
		err := b.doFor("revoke lease", max(min(left, AttemptTimeout), 500*time.Millisecond), func(ctx context.Context) error {
			_, err := b.cli.Revoke(ctx, l.id)
			if err != nil && strings.Contains(err.Error(), "requested lease not found") {
				return nil
			}
			return err
		})
		if err == nil || !errors.Is(err, ErrUnavailable) || left < 200*time.Millisecond {
			l.revokeErr = err
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// held is a granted claim.
type held struct {
	c        *claim
	lease    *lease
	rev      int64
	slots    []int
	released bool
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
	h.released = true
	h.lease.revoke(h.c.b)
	if h.c.lease == h.lease {
		h.c.lease = nil
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

// TTL is the lease TTL the backend was configured with (Config.TTL).
func (h *held) TTL() time.Duration { return h.c.b.cfg.TTL }

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
