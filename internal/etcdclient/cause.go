package etcdclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/internal/safetext"
)

// Unavailable is a request the cluster did not answer (a timeout, a
// broken connection, no leader): what was asked, the client's error,
// the endpoints, how long it was tried, and the sentinel it wraps beside
// Err (etcdlock's or etcdpause's ErrUnavailable).
//
// etcd's client says only "context deadline exceeded" when no member
// could be reached. So the first such error starts a diagnosis in the
// background (Diagnose: DNS, a refused connection, a certificate check, a
// member that connects but does not answer), which runs while the caller
// tries again; the message ends with its finding.
type Unavailable struct {
	What      string
	Err       error
	Endpoints []string
	Took      time.Duration
	Kind      error
	d         *diagnosis
}

func (e *Unavailable) Error() string {
	eps := make([]string, len(e.Endpoints))
	for i, ep := range e.Endpoints {
		eps[i] = redact(ep)
	}
	s := fmt.Sprintf("etcd unavailable: %s: no answer from %s within %v", e.What, strings.Join(eps, ","), e.Took.Round(100*time.Millisecond))
	if !errors.Is(e.Err, context.DeadlineExceeded) {
		s = fmt.Sprintf("etcd unavailable: %s: %v (%s, tried for %v)", e.What, e.Err, strings.Join(eps, ","), e.Took.Round(100*time.Millisecond))
	}
	if cause := e.d.wait(); cause != "" {
		s += ": " + cause
	}
	return s
}

func (e *Unavailable) Unwrap() []error { return []error{e.Err, e.Kind} }

// Unavailable makes the error for a request that got no answer, and
// starts a diagnosis unless one started within the last diagnoseEvery.
func (c *Client) Unavailable(what string, err error, took time.Duration) *Unavailable {
	return &Unavailable{What: what, Err: err, Endpoints: c.eps, Took: took, Kind: c.kind, d: c.diagnosis()}
}

// A diagnosis in the background: done is closed when cause is set.
type diagnosis struct {
	at    time.Time
	done  chan struct{}
	cause string
}

// diagnoseEvery is how old a diagnosis may be before another starts
// (a waiter can meet an unreachable cluster more than once).
const diagnoseEvery = 10 * time.Second

// Suspect starts a diagnosis (unless one started within diagnoseEvery)
// for a request that got no answer and will be sent again: the finding is
// then ready when the last attempt's Unavailable is reported.
func (c *Client) Suspect() { c.diagnosis() }

func (c *Client) diagnosis() *diagnosis {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.diag != nil && time.Since(c.diag.at) < diagnoseEvery {
		return c.diag
	}
	d := &diagnosis{at: time.Now(), done: make(chan struct{})}
	c.diag = d
	go func() {
		d.cause = c.Diagnose()
		close(d.done)
	}()
	return d
}

// wait returns the diagnosis' finding, waiting for it at most until it
// should have ended (every probe is bounded); "" if there is none.
func (d *diagnosis) wait() string {
	if d == nil {
		return ""
	}
	select {
	case <-d.done:
		return d.cause
	default:
	}
	t := time.NewTimer(time.Until(d.at.Add(3 * probeTimeout)))
	defer t.Stop()
	select {
	case <-d.done:
		return d.cause
	case <-t.C:
		return ""
	}
}

// probeTimeout bounds each step of a diagnosis of one endpoint.
const probeTimeout = 1 * time.Second

// Diagnose connects to each endpoint as the client does (DNS, TCP or the
// unix socket, TLS with the client's certificate checks) and says why
// none gave an answer, in one line: the first endpoint's cause, and how
// many others share it. A member that connects (and completes TLS) but did
// not answer is "accepts connections but gave no answer" — stopped,
// overloaded, or without a leader.
func (c *Client) Diagnose() string {
	causes := make([]string, len(c.eps))
	var wg sync.WaitGroup
	for i, ep := range c.eps {
		wg.Go(func() { causes[i] = probe(ep, c.tls) })
	}
	wg.Wait()
	var order []string
	eps := map[string][]string{}
	for i, cs := range causes {
		if eps[cs] == nil {
			order = append(order, cs)
		}
		eps[cs] = append(eps[cs], redact(c.eps[i]))
	}
	// Names from a certificate, a resolver or an endpoint are text from
	// outside: escaped, bounded.
	if len(order) == 1 {
		return safetext.Cut(order[0], 300) // every endpoint: no need to name them again
	}
	parts := make([]string, len(order))
	for i, cs := range order {
		parts[i] = strings.Join(eps[cs], ", ") + ": " + cs
	}
	return safetext.Cut(strings.Join(parts, "; "), 600)
}

// probe connects to one endpoint and says what went wrong.
func probe(ep string, tc *tls.Config) string {
	network, addr, host, secure := dialTarget(ep, tc)
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.Dial(network, addr)
	if err != nil {
		return dialCause(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(probeTimeout))
	if secure {
		cfg := tc.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"h2"}
		t := tls.Client(conn, cfg)
		if err := t.Handshake(); err != nil {
			if errors.Is(err, io.EOF) {
				return "closed the connection during the TLS handshake: not a TLS port (use http://), or our client certificate was refused"
			}
			return "TLS: " + strings.TrimPrefix(err.Error(), "tls: ")
		}
		// A member refusing our client certificate says so in its
		// first record after the handshake: read it.
		t.SetReadDeadline(time.Now().Add(probeTimeout / 4))
		if _, err := t.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err == nil {
			var b [16]byte
			if _, err := t.Read(b[:]); err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
				return "TLS: " + strings.TrimPrefix(err.Error(), "remote error: tls: ")
			}
		}
		return "accepts connections but gave no answer (stopped, overloaded, or without a leader)"
	}
	// Plain HTTP/2: a member answers the preface with its SETTINGS; a
	// TLS port closes the connection or sends an alert.
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")); err != nil {
		return dialCause(err)
	}
	var b [9]byte
	n, err := io.ReadFull(conn, b[:])
	switch {
	case n >= 1 && b[0] == 0x15, n >= 5 && string(b[:5]) == "HTTP/", err != nil && !isTimeout(err) && n == 0:
		return "does not speak plain HTTP/2: a TLS port? (use https://)"
	case n == 9 && b[3] == 0x4:
		return "accepts connections but gave no answer (stopped, overloaded, or without a leader)"
	case isTimeout(err):
		return "accepts connections but sends nothing (stopped, or not etcd)"
	}
	return "does not speak HTTP/2: not an etcd client port?"
}

// dialTarget is where and how the client connects for ep.
func dialTarget(ep string, tc *tls.Config) (network, addr, host string, secure bool) {
	scheme, rest, ok := strings.Cut(ep, "://")
	if !ok {
		h, _, _ := net.SplitHostPort(ep)
		return "tcp", ep, h, tc != nil
	}
	switch scheme {
	case "unix", "unixs":
		return "unix", rest, "", scheme == "unixs" || tc != nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "tcp", rest, "", scheme == "https"
	}
	return "tcp", u.Host, u.Hostname(), scheme == "https"
}

// dialCause words a failed connection: DNS, refused, unreachable.
func dialCause(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name + " (DNS)"
		}
		return "DNS lookup of " + dns.Name + " failed: " + dns.Err
	case isTimeout(err):
		return "connecting timed out (host down or packets dropped)"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s // "connection refused", "no such file or directory", ...
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
