//go:build linux

package etcdclient

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// A member that let a request run out of time without an answer (frozen,
// stopped, swapping) is left out of the client's round robin for
// avoidFor: gRPC itself would go on sending every third request to it
// until its keep-alive gave up on the connection (10 s, then 2 s for the
// answer), and each of those requests would wait its whole timeout (a
// waiter measured 6.8-8.7 s from a release to its command in 6 of 12
// trials with one member frozen, against 0.02 s with none). The member
// is tried again after avoidFor (on a new connection, which gRPC uses
// only once the member answers); when every member has been left out,
// all are tried again at once.
var avoidFor = 15 * time.Second // a variable for tests

// avoider keeps which endpoints are left out, and until when.
type avoider struct {
	mu    sync.Mutex
	out   map[string]time.Time // endpoint: left out until
	live  []string             // what the client was last given
	timer *time.Timer          // brings the next one back
}

// noAnswer reports whether err is an attempt that ran out of time with
// no answer from the member it went to (not a refusal, not the caller's
// cancel).
func noAnswer(ctx context.Context, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// sent notes where a request went and how it ended. A request that ran
// out of time without reaching any member (no peer: gRPC had no
// connection ready to send it on) brings every member back: those not
// left out are down, and the ones left out may answer now — members that
// let requests time out during an election, with the old leader killed
// (TestMemberKillKeepsLocks: 5 s and more of no answer from a cluster
// that had a leader again after 1.2 s).
func (c *Client) sent(ctx context.Context, p *peer.Peer, err error) {
	if !noAnswer(ctx, err) || len(c.eps) < 2 || c.Client == nil {
		return
	}
	if p.Addr == nil {
		c.bringBack()
		return
	}
	if ep := endpointOf(c.eps, p.Addr); ep != "" {
		c.leaveOut(ep)
	}
}

// bringBack ends every leave-out.
func (c *Client) bringBack() {
	a := &c.avoid
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.out) == 0 {
		return
	}
	clear(a.out)
	c.setLive()
}

// leaveOut leaves ep out of the round robin for avoidFor.
func (c *Client) leaveOut(ep string) {
	a := &c.avoid
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out == nil {
		a.out = map[string]time.Time{}
	}
	a.out[ep] = time.Now().Add(avoidFor)
	c.setLive()
}

// setLive gives the client the endpoints not left out (all of them if
// none is left), and sets the timer that brings the next one back.
func (c *Client) setLive() {
	a := &c.avoid
	now := time.Now()
	var live []string
	var next time.Time
	for _, e := range c.eps {
		until, out := a.out[e]
		switch {
		case !out || !until.After(now):
			delete(a.out, e)
			live = append(live, e)
		case next.IsZero() || until.Before(next):
			next = until
		}
	}
	if len(live) == 0 {
		// Every member went without an answer (a frozen leader makes
		// the others wait for an election too): all are given back.
		// A member's connection is made anew then, and a new connection
		// to a member that is still frozen never becomes ready, so
		// gRPC sends it nothing; only a connection made before the
		// freeze takes requests that get no answer.
		clear(a.out)
		live, next = c.eps, time.Time{}
	}
	if a.live == nil {
		a.live = c.eps
	}
	if !slices.Equal(live, a.live) {
		a.live = live
		c.Client.SetEndpoints(live...)
	}
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if !next.IsZero() {
		a.timer = time.AfterFunc(time.Until(next), func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			c.setLive()
		})
	}
}

// endpointOf returns the endpoint of eps that a connection to addr was
// made for, "" if none is known to be: an IP address matches an endpoint
// of that IP and port, or of a host name that resolves to it; a Unix
// socket its path.
func endpointOf(eps []string, addr net.Addr) string {
	if addr.Network() == "unix" {
		for _, e := range eps {
			if p, ok := strings.CutPrefix(e, "unix://"); ok && p == addr.String() {
				return e
			}
			if p, ok := strings.CutPrefix(e, "unixs://"); ok && p == addr.String() {
				return e
			}
		}
		return ""
	}
	ip, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	for _, e := range eps {
		hp := e
		if strings.Contains(e, "://") {
			u, err := url.Parse(e)
			if err != nil {
				continue
			}
			hp = u.Host
		}
		h, p, err := net.SplitHostPort(hp)
		if err != nil || p != port {
			continue
		}
		if net.ParseIP(h) != nil {
			if net.ParseIP(h).Equal(net.ParseIP(ip)) {
				return e
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		addrs, _ := net.DefaultResolver.LookupHost(ctx, h)
		cancel()
		if slices.ContainsFunc(addrs, func(a string) bool { return net.ParseIP(a).Equal(net.ParseIP(ip)) }) {
			return e
		}
	}
	return ""
}

// unary notes where each request went (one call per attempt: it runs
// inside the client's retry).
func (c *Client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var p peer.Peer
	err := invoke(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
	c.sent(ctx, &p, err)
	return err
}

// stream opens a stream (a watch, a lease renewal), noting where it
// went when an answer it waited for did not come in time (a renewal, a
// watch's creation), and whether its token was refused (auth.go).
func (c *Client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, open grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	p := new(peer.Peer)
	used := c.auth.current()
	s, err := open(ctx, desc, cc, method, append(opts, grpc.Peer(p))...)
	if err != nil {
		c.auth.opened(ctx, cc, used, err)
		c.sent(ctx, p, err)
		return nil, err
	}
	return &clientStream{ClientStream: s, c: c, ctx: ctx, cc: cc, p: p, used: used}, nil
}

type clientStream struct {
	grpc.ClientStream
	c    *Client
	ctx  context.Context
	cc   *grpc.ClientConn
	p    *peer.Peer
	used *token
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	s.c.auth.received(s.cc, s.used, m, err)
	if err != nil {
		s.c.sent(s.ctx, s.p, err)
	}
	return err
}
