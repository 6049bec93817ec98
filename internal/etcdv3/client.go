// Package clientv3 is a small etcd v3 client: the requests withlock-etcd
// and cron-gate-etcd make (ranges, transactions, leases, watches, status,
// login), sent as gRPC over HTTP/2 (a connection of its own, h2conn.go,
// with x/net's frames) with messages encoded by hand (internal/etcdpb). Its API follows the
// official client's (go.etcd.io/etcd/client/v3) where it has one.
//
// Why not the official client: a call of withlock-etcd makes a handful of
// requests and exits, and linking that client (gRPC, the protobuf
// runtime, etcd's generated API) cost each call about 8 ms of start-up
// on a 2-core host, as much as its requests (docs/benchmarks.md).
//
// What it keeps of gRPC's behaviour: a request waits for a connection to
// one of the client's endpoints (gRPC's WaitForReady) until its context
// ends, so a request is never sent to a member that cannot be reached;
// requests go to the connected endpoints in turn; a connection with
// requests under way is pinged every DialKeepAliveTime and closed when a
// ping goes unanswered for DialKeepAliveTimeout; a request is
// never sent twice, except one the member refused for an expired auth
// token, after a new login.
package clientv3

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"

	pb "github.com/crongate/crongate/internal/etcdpb"
)

// Config is a client's configuration.
type Config struct {
	Endpoints []string // http://HOST:PORT or https://HOST:PORT
	// DialTimeout bounds a connection's set-up (TCP and TLS) and, with
	// a Username, the login in New.
	DialTimeout time.Duration
	// DialKeepAliveTime is the silence after which a connection is
	// pinged; DialKeepAliveTimeout how long the ping may go unanswered
	// before the connection is closed.
	DialKeepAliveTime, DialKeepAliveTimeout time.Duration
	TLS                                     *tls.Config // for https:// endpoints
	Username, Password                      string
	// Intercept, if set, wraps every request but Status: call sends
	// it (the official client's unary interceptors).
	Intercept func(ctx context.Context, call func() error) error
}

// Client is a connection pool over a cluster's endpoints.
type Client struct {
	cfg Config

	mu      sync.Mutex
	eps     []string         // where requests go
	conns   map[string]*conn // by endpoint
	turn    int              // the round-robin turn
	changed chan struct{}    // closed when a connection is ready or eps change
	token   string           // the login's auth token
	closed  bool
}

// conn is the connection to one endpoint.
type conn struct {
	ep, scheme, host string
	cc               *h2conn // nil until connected
	dialing          bool
	failures         int
	retry            time.Time // no dial before
}

// ErrClosed is returned by requests of a closed client.
var ErrClosed = errors.New("the etcd client is closed")

// New creates a client. It connects when the first request is made; with
// a Username it logs in first (one request, within DialTimeout).
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoints")
	}
	c := &Client{cfg: cfg, conns: map[string]*conn{}, changed: make(chan struct{})}
	c.eps = append([]string{}, cfg.Endpoints...)
	for _, ep := range c.eps {
		if _, err := c.connLocked(ep); err != nil {
			return nil, err
		}
	}
	if cfg.Username != "" {
		timeout := cfg.DialTimeout
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := c.login(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// connLocked is ep's connection record, created if need be (c.mu held).
func (c *Client) connLocked(ep string) (*conn, error) {
	if cn := c.conns[ep]; cn != nil {
		return cn, nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an etcd endpoint URL", ep)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "2379")
	}
	cn := &conn{ep: ep, scheme: u.Scheme, host: host}
	c.conns[ep] = cn
	return cn, nil
}

// SetEndpoints changes where the next requests go.
func (c *Client) SetEndpoints(eps ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.eps = append([]string{}, eps...)
	for _, ep := range eps {
		c.connLocked(ep)
	}
	c.signalLocked()
}

func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Close closes the connections; requests under way fail.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, cn := range c.conns {
		if cn.cc != nil {
			cn.cc.Close()
			cn.cc = nil
		}
	}
	c.signalLocked()
	return nil
}

// pick returns a connection that can take a request: to endpoint ep, or
// for "" to one of c.eps, in turn. It dials the endpoints that have no
// connection, and waits for one until ctx ends.
func (c *Client) pick(ctx context.Context, ep string) (*conn, *h2conn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, ErrClosed
		}
		eps := c.eps
		if ep != "" {
			c.connLocked(ep)
			eps = []string{ep}
		}
		var wake time.Time
		for i := range eps {
			cn := c.conns[eps[(c.turn+i)%len(eps)]]
			if cn == nil {
				continue
			}
			if cn.cc != nil && !cn.cc.usable() {
				cn.cc.retire() // closed or going away: its requests finish, new ones dial again
				cn.cc = nil
			}
			if cc := cn.cc; cc != nil {
				if ep == "" {
					c.turn = (c.turn + i + 1) % len(eps)
				}
				c.mu.Unlock()
				return cn, cc, nil
			}
			if !cn.dialing {
				if d := time.Until(cn.retry); d > 0 {
					if wake.IsZero() || cn.retry.Before(wake) {
						wake = cn.retry
					}
					continue
				}
				cn.dialing = true
				go c.dial(cn)
			}
		}
		changed := c.changed
		c.mu.Unlock()
		var t *time.Timer
		var timer <-chan time.Time
		if !wake.IsZero() {
			t = time.NewTimer(time.Until(wake))
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
}

// notSent reports whether a request's error says the member never got
// it: the connection closed or went away before it was written, or the
// member's GOAWAY or REFUSED_STREAM says it did not process the stream.
func notSent(err error) bool {
	var ue unsentError
	return errors.As(err, &ue)
}

// dial connects cn, once; a failure is retried after a back-off (1 s,
// doubling up to 8 s, with jitter) when a request needs the endpoint.
func (c *Client) dial(cn *conn) {
	timeout := c.cfg.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cc, err := c.connect(ctx, cn)
	c.mu.Lock()
	defer c.mu.Unlock()
	cn.dialing = false
	switch {
	case err != nil:
		cn.failures++
		backoff := time.Second << min(cn.failures-1, 3)
		cn.retry = time.Now().Add(backoff/2 + rand.N(backoff/2))
	case c.closed:
		cc.Close()
	default:
		cn.failures = 0
		cn.cc = cc
		go c.keepAlive(cn, cc)
	}
	c.signalLocked()
}

// maxUnsent is how many times a call is made when its requests are not
// served (a member going away or refusing the stream).
const maxUnsent = 3

// retire takes cc, cn's connection, out of service: the next request
// dials again, and cc closes when its requests have ended.
func (c *Client) retire(cn *conn, cc *h2conn) {
	c.detach(cn, cc)
	cc.retire()
}

// detach makes cn forget cc, so that the next request dials again.
func (c *Client) detach(cn *conn, cc *h2conn) {
	c.mu.Lock()
	if cn.cc == cc {
		cn.cc = nil
	}
	c.mu.Unlock()
}

// drop closes cc, cn's connection, so that the next request dials again.
func (c *Client) drop(cn *conn, cc *h2conn) {
	c.detach(cn, cc)
	cc.Close()
}

// keepAlive pings cc while it has requests under way, at most every
// DialKeepAliveTime (and a tenth: etcd's members count pings closer than
// --grpc-keepalive-min-time, 5 s, as abuse), and closes it when a ping
// goes unanswered for DialKeepAliveTimeout, so that the next requests go
// to a new connection. Like gRPC's client, it does not ping an idle
// connection: etcd closes one pinged without requests after a few pings.
func (c *Client) keepAlive(cn *conn, cc *h2conn) {
	every := c.cfg.DialKeepAliveTime
	if every <= 0 {
		return
	}
	timeout := c.cfg.DialKeepAliveTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	t := time.NewTicker(every + every/10)
	defer t.Stop()
	for range t.C {
		if cc.isClosed() {
			return
		}
		if cc.active() == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := cc.Ping(ctx)
		cancel()
		if err != nil {
			c.drop(cn, cc)
			return
		}
	}
}

func (c *Client) connect(ctx context.Context, cn *conn) (*h2conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", cn.host)
	if err != nil {
		return nil, err
	}
	if cn.scheme == "https" {
		tc := &tls.Config{}
		if c.cfg.TLS != nil {
			tc = c.cfg.TLS.Clone()
		}
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(cn.host)
		}
		tc.NextProtos = []string{"h2"}
		tlc := tls.Client(nc, tc)
		if err := tlc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tlc
	}
	// Ready once the member has spoken as an HTTP/2 server (its
	// settings frame, which it sends first), as gRPC waits for it: a
	// request is never sent where it cannot be served.
	cc, err := newH2Conn(nc, cn.scheme, cn.host)
	if err != nil {
		return nil, err
	}
	select {
	case <-cc.ready:
		return cc, nil
	case <-cc.done:
		return nil, cc.err
	case <-ctx.Done():
		cc.Close()
		return nil, ctx.Err()
	}
}

// Invoke sends the request req to method ("/etcdserverpb.KV/Txn") and
// decodes the answer into resp, through the Intercept hook.
func (c *Client) Invoke(ctx context.Context, method string, req, resp any) error {
	call := func() error { return c.call(ctx, "", method, req, resp) }
	var err error
	if c.cfg.Intercept != nil {
		err = c.cfg.Intercept(ctx, call)
	} else {
		err = call()
	}
	return ContextError(ctx, err)
}

// call sends req to ep ("" for any endpoint) and decodes the answer.
func (c *Client) call(ctx context.Context, ep, method string, req, resp any) error {
	body, ok := pb.Marshal(req)
	if !ok {
		return fmt.Errorf("clientv3: cannot encode a %T", req)
	}
	relogged := false
	for unsent := 0; ; {
		cn, cc, err := c.pick(ctx, ep)
		if err != nil {
			return err
		}
		data, err := c.roundTrip(ctx, cn, cc, method, frame(body))
		var ee EtcdError
		if errors.As(err, &ee) && ee.unsent {
			// Never served: on another connection, a few times (a
			// member that refuses every stream is not dialled in a
			// loop). The connection's other requests finish on it.
			c.retire(cn, cc)
			if unsent++; unsent < maxUnsent {
				continue
			}
			return err
		}
		if err == ErrInvalidAuthToken && c.cfg.Username != "" && !relogged && method != "/etcdserverpb.Auth/Authenticate" {
			if err := c.login(ctx); err != nil {
				return err
			}
			relogged = true
			continue // refused, not applied: sent again with the new token
		}
		if err != nil {
			return err
		}
		if data == nil {
			return unavailable("%s: the member's answer holds no message", cn.ep)
		}
		return pb.Unmarshal(data, resp)
	}
}

// frame is a gRPC message frame: not compressed, its length, itself.
func frame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// maxAnswer bounds an answer's size: etcd's own limit on a request is
// 1.5 MiB, and the largest answers here are reads of a prefix.
const maxAnswer = 64 << 20

type requireLeaderKey struct{}

// WithRequireLeader marks ctx's requests: a member without a leader
// refuses them at once ("etcdserver: no leader"), and ends such a watch.
func WithRequireLeader(ctx context.Context) context.Context {
	return context.WithValue(ctx, requireLeaderKey{}, true)
}

// headers are a request's header fields beyond gRPC's own.
func (c *Client) headers(ctx context.Context, method string) []hpack.HeaderField {
	var h []hpack.HeaderField
	if ctx.Value(requireLeaderKey{}) != nil {
		h = append(h, hpack.HeaderField{Name: "hasleader", Value: "true"})
	}
	c.mu.Lock()
	if c.token != "" && method != "/etcdserverpb.Auth/Authenticate" {
		h = append(h, hpack.HeaderField{Name: "token", Value: c.token, Sensitive: true})
	}
	c.mu.Unlock()
	return h
}

// roundTrip sends one request (body, a framed message) and returns the
// answer's first message.
func (c *Client) roundTrip(ctx context.Context, cn *conn, cc *h2conn, method string, body []byte) ([]byte, error) {
	st, err := cc.open(ctx, method, c.headers(ctx, method), body, true)
	if err != nil {
		return nil, streamError(ctx, cn, err)
	}
	defer st.close()
	hdr, err := st.awaitHeader()
	if err != nil {
		return nil, streamError(ctx, cn, err)
	}
	if err := checkHeaders(hdr, cn); err != nil {
		return nil, err
	}
	var first []byte
	r := &frameReader{r: st}
	for {
		msg, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, streamError(ctx, cn, err)
		}
		if first != nil {
			// A unary answer is one message; more is a member (or
			// something posing as one) that does not stop.
			return nil, unavailable("%s: an answer of more than one message", cn.ep)
		}
		first = msg
	}
	if err := answerStatus(hdr, st.Trailer()); err != nil {
		return nil, err
	}
	if first == nil {
		first = []byte{}
	}
	return first, nil
}

// streamError is the error of a request whose stream failed.
func streamError(ctx context.Context, cn *conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if notSent(err) {
		return EtcdError{Unavailable, fmt.Sprintf("%s: %v", cn.ep, err), true}
	}
	return unavailable("%s: %v", cn.ep, err)
}

// field is the value of the header field name in h, "" if none.
func field(h []hpack.HeaderField, name string) string {
	for _, f := range h {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// checkHeaders checks an answer's HTTP status; an answer made only of
// trailers carries its gRPC status in its headers.
func checkHeaders(h []hpack.HeaderField, cn *conn) error {
	if s := field(h, ":status"); s != "200" {
		return unavailable("%s: HTTP status %.20q", cn.ep, s)
	}
	if ct := field(h, "content-type"); !strings.HasPrefix(ct, "application/grpc") {
		return unavailable("%s: an answer of content type %.40q", cn.ep, ct)
	}
	if s := field(h, "grpc-status"); s != "" {
		return statusError(s, field(h, "grpc-message"))
	}
	return nil
}

// answerStatus is the gRPC status of an answer read to its end.
func answerStatus(h, trailer []hpack.HeaderField) error {
	if s := field(h, "grpc-status"); s != "" {
		return statusError(s, field(h, "grpc-message"))
	}
	return statusError(field(trailer, "grpc-status"), field(trailer, "grpc-message"))
}

// frameReader reads gRPC message frames.
type frameReader struct {
	r   io.Reader
	hdr [5]byte
}

func (f *frameReader) next() ([]byte, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, errors.New("an answer cut short")
		}
		return nil, err
	}
	if f.hdr[0] != 0 {
		return nil, errors.New("a compressed answer, which was not asked for")
	}
	n := binary.BigEndian.Uint32(f.hdr[1:])
	if n > maxAnswer {
		return nil, fmt.Errorf("an answer of %d bytes", n)
	}
	// Read as it comes, not allocated from the length prefix: a length
	// is only a claim.
	var buf bytes.Buffer
	buf.Grow(int(min(n, 64<<10)))
	if m, err := io.CopyN(&buf, f.r, int64(n)); m != int64(n) {
		if err == nil || err == io.EOF {
			err = errors.New("an answer cut short")
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// login gets an auth token for the user.
func (c *Client) login(ctx context.Context) error {
	var resp pb.AuthenticateResponse
	err := c.call(ctx, "", "/etcdserverpb.Auth/Authenticate", &pb.AuthenticateRequest{Name: c.cfg.Username, Password: c.cfg.Password}, &resp)
	if err != nil {
		return ContextError(ctx, err)
	}
	c.mu.Lock()
	c.token = resp.Token
	c.mu.Unlock()
	return nil
}
