package hcping

// This file sends one HTTP POST and reads its status: what the
// watchdog's webhook notifier and the healthchecks pings need. It is
// net/http's client, set up for them:
//
//   - Proxies come from the environment, as net/http reads it
//     (http.ProxyFromEnvironment, once per process): HTTPS_PROXY for https
//     URLs, HTTP_PROXY for http URLs, NO_PROXY for exceptions, or their
//     lower-case forms. A target on loopback (localhost, 127.0.0.0/8, ::1)
//     never goes through a proxy.
//   - No redirect is followed: a 3xx is the answer, with its Location in
//     Response.Location. A webhook that moved is a configuration to fix,
//     and following it would send the body, and basic auth, somewhere the
//     config does not name.
//   - The context bounds everything (proxy, dial, TLS handshake, write,
//     read); there is no other timeout. One request per connection: a
//     process sends a few of these, minutes apart.
//   - At most MaxBody bytes of a body are read, and only for an answer
//     that is not 2xx (for the error message).
//   - user:password@ in the URL is sent as basic auth.
//   - An error never quotes the URL, which may hold a secret (a
//     healthchecks UUID, a token in the query); callers name the target
//     themselves, redacted.
//
// cron-gate and cron-gate-etcd link this code (and so net/http, which
// also serves their dashboard); withlock does not (tests/deps_test.go).

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/crongate/crongate/internal/safetext"
)

// Response is what is read of the server's answer. Its strings are safe to
// print (safetext).
type Response struct {
	Status   int    // e.g. 200
	Reason   string // e.g. "OK"; one line of at most 80 bytes
	Location string // the Location header of a redirect; one line of at most 200 bytes
	Body     string // the first MaxBody bytes of the body of an answer that is not 2xx; lines kept
}

// MaxBody is how much of a response body is read (for error messages).
const MaxBody = 512

// OK reports whether the status is 2xx.
func (r Response) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Options are optional settings; nil is fine.
type Options struct {
	TLS *tls.Config // nil: the system roots
}

// UserAgent is the User-Agent of every request.
const UserAgent = "cron-gate"

var defaultClient = sync.OnceValue(func() *http.Client { return newClient(nil) })

func newClient(cfg *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	t.DisableKeepAlives = true
	// The caller's context is the one bound (a webhook's timeout may be
	// longer than these defaults).
	t.DialContext = (&net.Dialer{}).DialContext
	t.TLSHandshakeTimeout = 0
	if cfg != nil {
		t.TLSClientConfig = cfg.Clone()
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// Post sends body to rawURL with the given Content-Type and returns the
// answer's status. An error means no status was received: the URL is bad,
// the proxy, the connection, the TLS handshake, the write or the read
// failed, or ctx ended (an error that wraps context.DeadlineExceeded and
// says "timed out" when its deadline passed).
func Post(ctx context.Context, rawURL, contentType string, body []byte, opt *Options) (Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error quotes the URL.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Response{}, fmt.Errorf("bad URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Response{}, fmt.Errorf("bad URL: scheme %q is not http or https", safetext.Cut(u.Scheme, 20))
	}
	if u.Hostname() == "" {
		return Response{}, errors.New("bad URL: no host")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return Response{}, cause(ctx, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", UserAgent)
	c := defaultClient()
	if opt != nil && opt.TLS != nil {
		c = newClient(opt.TLS)
		defer c.CloseIdleConnections()
	}
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, cause(ctx, err)
	}
	defer resp.Body.Close()
	r := Response{
		Status:   resp.StatusCode,
		Reason:   safetext.Cut(strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode))), 80),
		Location: safetext.Cut(resp.Header.Get("Location"), 200),
	}
	if !r.OK() {
		// A prefix only: what is left unread is dropped with the
		// connection. A read error leaves what was read.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
		r.Body = safetext.Text(string(b))
	}
	return r, nil
}

// cause is err without net/http's *url.Error wrapper, which quotes the
// URL, and with the context's reason first when ctx has ended.
func cause(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if _, ok := ctx.Deadline(); ok && (errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) {
		return &timeoutError{err}
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// timeoutError is the deadline of the context passing.
type timeoutError struct{ err error }

func (e *timeoutError) Error() string {
	if e.err == context.DeadlineExceeded {
		return "timed out"
	}
	return "timed out (" + e.err.Error() + ")"
}

func (e *timeoutError) Unwrap() []error {
	return []error{context.DeadlineExceeded, e.err}
}
