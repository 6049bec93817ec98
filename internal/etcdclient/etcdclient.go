//go:build linux

// Package etcdclient creates the etcd client the way both packages that
// talk to etcd (etcdlock for withlock-etcd, etcdpause for cron-gate-etcd)
// need it, and holds the rules their configurations share: the default
// endpoint, the endpoints' form, the shape of a key prefix, TLS and
// etcd's user/password auth (with the password never on a command line,
// in a URL or in a message), and the oldest server version that is safe
// to run them on (CheckVersions).
package etcdclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/internal/etcderr"
	clientv3 "github.com/crongate/crongate/internal/etcdv3"
	"github.com/crongate/crongate/internal/safeopen"
)

// DefaultEndpoint is the client URL used when none is given: a member on
// this host, on etcd's default client port.
const DefaultEndpoint = "http://127.0.0.1:2379"

// Endpoints returns eps, or DefaultEndpoint alone when eps is empty. ok is
// false when an entry is empty (a stray comma): such a list is refused,
// not cleaned up.
func Endpoints(eps []string) (_ []string, ok bool) {
	if len(eps) == 0 {
		return []string{DefaultEndpoint}, true
	}
	for _, e := range eps {
		if e == "" {
			return nil, false
		}
	}
	return eps, true
}

// ValidPrefix reports whether p can be a key prefix: it starts with "/" and
// does not end with "/", so that the keys PREFIX/... are well formed and
// one deployment's prefix is never a prefix of another's keys by accident.
func ValidPrefix(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/")
}

// Security is how to authenticate to a cluster, and it to us.
type Security struct {
	// CAFile holds the PEM certificates that sign the members'
	// certificates; "" trusts the system's roots. CertFile and KeyFile
	// are a client certificate and its key (PEM), for members started
	// with --client-cert-auth. ServerName is the name the members'
	// certificates must carry, when it is not the endpoints' host. Any
	// of them needs https:// endpoints.
	CAFile, CertFile, KeyFile, ServerName string
	// User and Password log in to etcd's auth (both or neither). The
	// password is read by the caller from a file (ReadPassword) or the
	// environment, never from a command line; it appears in no message.
	User, Password string
}

// TLS reports whether s asks for TLS.
func (s *Security) TLS() bool {
	return s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != ""
}

// Check checks the endpoints (each http:// or https://, host:port, no
// user or password in the URL — a secret there would show in every
// message that names the endpoint), that TLS options come with https://
// endpoints only (the client would silently drop TLS for http://), and
// that a user comes with a password and the reverse. opt names the
// options for messages: flag names or config keys.
func (s *Security) Check(eps []string, opt Options) error {
	https := 0
	for _, e := range eps {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
			return fmt.Errorf("%s: %q is not a URL like http://HOST:2379 or https://HOST:2379", opt.Endpoints, redact(e))
		}
		if u.User != nil {
			return fmt.Errorf("%s: %s carries a user or password: give them with %s and %s instead (a secret in a URL shows in messages)",
				opt.Endpoints, redact(e), opt.User, opt.Password)
		}
		if u.Scheme == "https" {
			https++
		}
	}
	switch {
	case s.TLS() && https != len(eps):
		return fmt.Errorf("%s need https:// endpoints: every entry of %s must be one", opt.TLS, opt.Endpoints)
	case (s.CertFile == "") != (s.KeyFile == ""):
		return fmt.Errorf("%s: a client certificate needs its key, and the reverse", opt.TLS)
	case s.User != "" && s.Password == "":
		return fmt.Errorf("%s %s has no password: %s", opt.User, s.User, opt.Password)
	case s.User == "" && s.Password != "":
		return fmt.Errorf("a password is given (%s) but no %s", opt.Password, opt.User)
	case strings.Contains(s.User, ":"):
		return fmt.Errorf("%s %q: etcd user names have no colon", opt.User, s.User)
	}
	return nil
}

// Options names the options of a Config for messages.
type Options struct {
	Endpoints string // "--endpoints", "endpoints"
	TLS       string // "--ca-file, --cert-file, --key-file and --server-name"
	User      string // "--etcd-user", "user"
	Password  string // where a password comes from
}

// redact keeps a URL's scheme and host only, for a message about a URL
// that may hold a secret.
func redact(e string) string {
	if u, err := url.Parse(e); err == nil && u.User != nil {
		u.User = url.User("…")
		return u.String()
	}
	if i := strings.LastIndexByte(e, '@'); i >= 0 {
		return "…" + e[i:]
	}
	return e
}

// maxPEM bounds a certificate or key file; maxPassword a password file.
const (
	maxPEM      = 1 << 20
	maxPassword = 4096
)

// ReadPassword reads a password file: a regular file (not a symlink, never
// a FIFO or device: safeopen.ReadFile) of at most 4 KiB that neither group
// nor others can read or write (mode 0600 or stricter); the password is its
// first line, without the line end. what names it in messages
// ("--password-file", "[etcd] password_file"); the password is never in one.
func ReadPassword(path, what string) (string, error) {
	data, st, err := safeopen.ReadFile(path, maxPassword, false)
	if err != nil {
		if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
			return "", fmt.Errorf("%s %w", what, fe)
		}
		return "", fmt.Errorf("%s %s: %v", what, path, safeopen.Cause(err))
	}
	if st.Mode&0o077 != 0 {
		return "", fmt.Errorf("%s %s has mode %04o: a password others can read is no secret; chmod 600 it", what, path, st.Mode&0o777)
	}
	pw, _, _ := strings.Cut(string(data), "\n")
	pw = strings.TrimSuffix(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("%s %s holds no password on its first line", what, path)
	}
	return pw, nil
}

// tlsConfig loads the TLS options' files.
func (c *Security) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := readPEM(c.CAFile, "CA file")
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := readPEM(c.CertFile, "client certificate")
		if err != nil {
			return nil, err
		}
		key, err := readPEM(c.KeyFile, "client key")
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The error of X509KeyPair names no key material.
			return nil, fmt.Errorf("client certificate %s and key %s: %v", c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// readPEM reads a certificate or key file (symlinks followed: /etc/ssl
// is made of them; never a FIFO or device).
func readPEM(path, what string) ([]byte, error) {
	data, _, err := safeopen.ReadFile(path, maxPEM, true)
	if err != nil {
		if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
			return nil, fmt.Errorf("%s %w", what, fe)
		}
		return nil, fmt.Errorf("%s %s: %v", what, path, safeopen.Cause(err))
	}
	return data, nil
}

// ErrLogin is wrapped by New's error when etcd refused the user or
// password: a definite answer, not an unreachable cluster.
var ErrLogin = errors.New("etcd refused the login")

// Client is an etcd client that talks to one member until it meets
// trouble, then to the others, then to all of them.
//
// A call of withlock-etcd or cron-gate-etcd makes a handful of requests
// and exits; connecting to every member, as etcd's official client does, cost it
// a connection per member (HTTP/2 set-up on both sides) for requests that
// one member answers. So a Client connects to one endpoint, picked at
// random (which spreads the calls over the members). When a request to
// it gets no answer (a timeout, a broken connection, no leader), or its
// first request is not answered within firstAnswer (a member that is
// down, or whose host is: a request waiting for the connection then goes
// to whichever other member connects first), it connects to the **other**
// members: a request sent again never goes back to the member that just
// failed it, as it could in a round-robin turn over all of them. Trouble there
// too, or its caller (Widen: etcdlock at half the first renewal period,
// so that a long holder has every member by its first renewal; a
// period's claim) connects it to every member, and every request then
// goes to the next connected member in turn, which is what lets a
// renewal that got no answer be sent again to another member.
//
// With etcd's user/password auth the client connects to every member
// from the start: it logs in while it is created, before a request could
// be sent elsewhere.
type Client struct {
	*clientv3.Client
	all   []string // every endpoint
	first string   // the endpoint connected first

	mu    sync.Mutex
	stage int // first, others or all
	timer *time.Timer
}

// The stages of a Client: the endpoints it is connected to.
const (
	stageFirst  = iota // the one picked at random
	stageOthers        // every endpoint but that one
	stageAll           // every endpoint
)

// firstAnswer is how long a first request may go unanswered before the
// client connects to the other members.
const firstAnswer = 250 * time.Millisecond

// New creates a client for the endpoints eps, which sec.Check has
// accepted. dialTimeout bounds connecting to a member (and, with a User,
// the login). Without a User it does not contact the cluster (the client
// connects at its first request): an unreachable cluster shows up in the
// first request. With one, it logs in (one request); a refused login wraps
// ErrLogin, no answer is returned as the client's error.
//
// The client pings a member it has requests under way with every 5.5 s
// and leaves it after 1 s without an answer; etcd refuses pings more
// often than every 5 s (--grpc-keepalive-min-time), and on a connection
// without requests. It logs nothing: errors are
// returned to the caller, which says them in its own words.
func New(eps []string, dialTimeout time.Duration, sec Security) (*Client, error) {
	c := &Client{all: eps, first: eps[rand.IntN(len(eps))]}
	if sec.User != "" || len(eps) == 1 {
		c.stage = stageAll
	}
	cc := clientv3.Config{
		Endpoints:            c.endpoints(),
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: time.Second,
		Intercept:            c.watchAnswers,
		Username:             sec.User,
		Password:             sec.Password,
	}
	if sec.TLS() {
		tc, err := sec.tlsConfig()
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
	}
	c.mu.Lock()
	if c.stage == stageFirst {
		c.timer = time.AfterFunc(firstAnswer, func() { c.trouble(stageFirst) })
	}
	c.mu.Unlock()
	cli, err := clientv3.New(cc)
	if err != nil {
		c.stopTimer()
		if isLoginRefused(err) {
			return nil, fmt.Errorf("%w as user %s: %v", ErrLogin, sec.User, err)
		}
		return nil, err
	}
	c.mu.Lock()
	c.Client = cli
	if len(cc.Endpoints) != len(c.endpoints()) { // moved on while clientv3.New ran
		cli.SetEndpoints(c.endpoints()...)
	}
	c.mu.Unlock()
	return c, nil
}

// endpoints are the endpoints of the client's stage (c.mu held, or
// before the client is shared).
func (c *Client) endpoints() []string {
	switch c.stage {
	case stageFirst:
		return []string{c.first}
	case stageOthers:
		var eps []string
		for _, e := range c.all {
			if e != c.first {
				eps = append(eps, e)
			}
		}
		return eps
	}
	return c.all
}

// watchAnswers wraps every request: an answer stops the first
// request's timer; no answer moves the client on from the stage the
// request was sent in.
func (c *Client) watchAnswers(_ context.Context, call func() error) error {
	c.mu.Lock()
	stage := c.stage
	c.mu.Unlock()
	err := call()
	switch {
	case err == nil:
		c.stopTimer()
	case etcderr.Ambiguous(err):
		c.trouble(stage)
	}
	return err
}

// trouble moves the client to the next stage, if it is still at stage
// (a request sent in an earlier stage says nothing of the members of this
// one).
func (c *Client) trouble(stage int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stage == stage && stage < stageAll {
		c.moveLocked(stage + 1)
	}
}

func (c *Client) moveLocked(stage int) {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if stage <= c.stage {
		return
	}
	c.stage = stage
	if c.Client != nil {
		c.Client.SetEndpoints(c.endpoints()...)
	}
}

func (c *Client) stopTimer() {
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()
}

// Widen connects to every endpoint (once; at once when the client is
// connected to all of them already). Callers that got no answer call it
// before they try again, and callers that will hold a lease for long.
func (c *Client) Widen() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moveLocked(stageAll)
}

func isLoginRefused(err error) bool {
	s := err.Error()
	return strings.Contains(s, "authentication failed") || strings.Contains(s, "invalid user ID or password")
}

// Minimum safe server versions: etcd issue #15247 (a leader that stalls
// past a lease's TTL can, when it resumes, revoke leases that the clients
// renewed meanwhile through a new leader, deleting live holders' keys) is
// fixed by PR #16822 in 3.6.0, and by its backports in 3.5.13 (PR #17425)
// and 3.4.31 (PR #17465). Older members can hand a lock to two holders
// after a long enough leader stall, whatever the client does.
var minPatch = map[[2]int]int{{3, 4}: 31, {3, 5}: 13}

// MinSafeVersions says the minimum safe versions in words, for messages
// and docs.
const MinSafeVersions = "3.4.31, 3.5.13 or 3.6.0"

// SafeVersion reports whether a server version ("3.4.23", as a member's
// Status says it) carries the fix of etcd issue #15247. known is false for
// a string that is not a version.
func SafeVersion(v string) (safe, known bool) {
	var maj, minor, patch int
	core, _, _ := strings.Cut(v, "-") // "3.6.0-rc.1"
	if n, err := fmt.Sscanf(core, "%d.%d.%d", &maj, &minor, &patch); n != 3 || err != nil ||
		fmt.Sprintf("%d.%d.%d", maj, minor, patch) != core {
		return false, false
	}
	switch {
	case maj != 3:
		return maj > 3, true
	case minor >= 6:
		return true, true
	}
	p, ok := minPatch[[2]int{maj, minor}]
	return ok && patch >= p, true
}

// Warning returns the warning for members older than the minimum safe
// version, "" if none was found, waiting at most wait for the check to
// end.
func (v *VersionCheck) Warning(wait time.Duration) string {
	if v == nil {
		return ""
	}
	select {
	case <-v.done:
	case <-time.After(wait):
		return ""
	}
	if len(v.old) == 0 {
		return ""
	}
	return fmt.Sprintf("etcd server %s is older than %s: a leader that stalls longer than a lease's TTL can, when it resumes, delete the keys of live holders (etcd issue #15247); upgrade the members (docs/etcd.md, Server versions)",
		strings.Join(v.old, ", "), MinSafeVersions)
}
