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
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crongate/crongate/internal/etcdendpoint"
	"github.com/crongate/crongate/internal/safeopen"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// DefaultEndpoint is the client URL used when none is given: a member on
// this host, on etcd's default client port.
const DefaultEndpoint = "http://127.0.0.1:2379"

// Endpoints returns eps, or DefaultEndpoint alone when eps is empty. A
// list with an empty entry (a stray comma) is refused, not cleaned up:
// what names the option in the message ("--endpoints", "[etcd] endpoints").
func Endpoints(eps []string, what string) ([]string, error) {
	if len(eps) == 0 {
		return []string{DefaultEndpoint}, nil
	}
	for _, e := range eps {
		if e == "" {
			return nil, fmt.Errorf("%s has an empty entry (stray comma?)", what)
		}
	}
	return eps, nil
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
	// password is read from a file or the environment (Password), never
	// from a command line; it appears in no message.
	User, Password string
}

// TLS reports whether s asks for TLS.
func (s *Security) TLS() bool {
	return s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != ""
}

// Check checks the endpoints, which take etcdctl's forms —
// http://HOST:PORT, https://HOST:PORT, HOST:PORT (TLS when TLS options
// are given), unix://PATH and unixs://PATH — with no user or password in
// a URL (a secret there would show in every message that names the
// endpoint); that TLS options come with no http:// or unix:// endpoint
// (the client would silently drop TLS for it); and that a user comes with
// a password and the reverse. opt names the options for messages: flag
// names or config keys.
func (s *Security) Check(eps []string, opt Options) error {
	for _, e := range eps {
		scheme, err := etcdendpoint.Check(e, opt.User, opt.PasswordFile)
		if err != nil {
			return fmt.Errorf("%s: %w", opt.Endpoints, err)
		}
		if s.TLS() {
			if err := etcdendpoint.CheckTLS(e, scheme, opt.TLS); err != nil {
				return err
			}
		}
	}
	switch {
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
	Endpoints    string // "--endpoints", "endpoints"
	TLS          string // "--ca-file, --cert-file, --key-file and --server-name"
	User         string // "--etcd-user", "user"
	Password     string // where a password comes from
	PasswordFile string // "--password-file": where a URL's secret goes instead
}

// redact: etcdendpoint.Redact.
var redact = etcdendpoint.Redact

// maxPEM bounds a certificate or key file; maxPassword a password file.
const (
	maxPEM      = 1 << 20
	maxPassword = 4096
)

// Password is the auth password both etcd binaries use: read from file
// (ReadPassword; what names it in messages) when file is set, else the
// variable env. env is taken out of the environment either way, so that
// the command run does not inherit a secret. "" when neither gives one
// (Security.Check then refuses a user without a password).
func Password(file, what, env string) (string, error) {
	pw := os.Getenv(env)
	os.Unsetenv(env)
	if file != "" {
		return ReadPassword(file, what)
	}
	return pw, nil
}

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

// Client is etcd's official client (go.etcd.io/etcd/client/v3), made
// the way both tools need it: connected to every endpoint, each request
// going to the next connected member in turn (gRPC's round robin), so a
// request sent again after no answer goes to another member; silent (its
// logger discards: errors are returned to the caller, which says them in
// its own words); and its errors given a cause (Cause).
type Client struct {
	*clientv3.Client
	eps  []string
	tls  *tls.Config // nil: plain
	kind error       // what its Unavailable errors wrap

	dmu  sync.Mutex
	diag *diagnosis // the last one started

	watches atomic.Uint64 // watches started (Watch)
	avoid   avoider       // members left out of the round robin (avoid.go)
	auth    *tokenAuth    // nil without a user
}

// Keep-alive pings on a connection with requests under way: gRPC's
// client sends none more often than every 10 s, and etcd refuses pings
// more often than every 5 s (--grpc-keepalive-min-time). A member that
// answers no ping within keepAliveTimeout is left for the others.
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 2 * time.Second
)

// New creates a client for the endpoints eps, which sec.Check has
// accepted. dialTimeout bounds the login (with a User: one request, made
// here); without a User New does not wait for the cluster: an unreachable
// cluster shows up in the first request. A refused login wraps ErrLogin;
// a login without an answer is an Unavailable. kind is the sentinel
// every Unavailable of this client wraps.
func New(eps []string, dialTimeout time.Duration, sec Security, kind error) (*Client, error) {
	cc := clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Logger:               zap.NewNop(),
	}
	c := &Client{eps: eps, kind: kind}
	var auth *tokenAuth
	if sec.User != "" {
		// The login and its token are ours (tokenAuth), not the client's.
		auth = &tokenAuth{user: sec.User, password: sec.Password}
		c.auth = auth
		cc.DialOptions = append(cc.DialOptions, grpc.WithPerRPCCredentials(auth),
			grpc.WithChainUnaryInterceptor(auth.unary))
	}
	// Inside the others: each attempt, as it went to a member.
	cc.DialOptions = append(cc.DialOptions, grpc.WithChainUnaryInterceptor(c.unary), grpc.WithChainStreamInterceptor(c.stream))
	if sec.TLS() || anyTLS(eps) {
		tc, err := sec.tlsConfig()
		if err != nil {
			return nil, err
		}
		cc.TLS, c.tls = tc, tc
		if sec.ServerName != "" {
			// gRPC checks the certificate against the authority, the
			// endpoint's host unless set: --server-name sets it.
			cc.DialOptions = append(cc.DialOptions, grpc.WithAuthority(sec.ServerName))
		}
	}
	start := time.Now()
	cli, err := clientv3.New(cc)
	if err == nil && auth != nil {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		err = auth.login(ctx, cli.ActiveConnection())
		cancel()
		if err != nil {
			cli.Close()
		}
	}
	if err != nil {
		if isLoginRefused(err) {
			return nil, fmt.Errorf("%w as user %s: %v", ErrLogin, sec.User, err)
		}
		if Ambiguous(err) {
			// The login got no answer.
			return nil, c.Unavailable("log in", err, time.Since(start))
		}
		return nil, err
	}
	c.Client = cli
	return c, nil
}

// anyTLS reports whether an endpoint asks for TLS by its scheme.
func anyTLS(eps []string) bool {
	for _, e := range eps {
		if strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "unixs://") {
			return true
		}
	}
	return false
}

func isLoginRefused(err error) bool {
	if errors.Is(err, rpctypes.ErrAuthFailed) {
		return true
	}
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

// Watch watches as the client does, on a gRPC stream of the watch's own.
// The client puts every watch whose context carries the same metadata on
// one stream, which stays on the member it was opened on: a frozen
// member then silences every watch of the process, and a watch started
// again joins the same stuck stream, until gRPC's keep-alive gives up on
// the connection (10 s, then 2 s for the answer). A stream of its own
// goes to the next member in turn (round robin), so a waiter that gave up
// on a silent watch (its poll read found the release) watches again
// through another member at once. The metadata key is ignored by etcd.
func (c *Client) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	ctx = metadata.AppendToOutgoingContext(ctx, "crongate-watch", strconv.FormatUint(c.watches.Add(1), 10))
	return c.Client.Watch(ctx, key, opts...)
}
