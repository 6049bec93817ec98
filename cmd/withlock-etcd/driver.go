//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/etcdlock"
	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	wc "github.com/crongate/crongate/internal/withlock"
)

// driver is the etcd backend's withlock.Driver: its flags' defaults and
// checks, and the etcdlock.Backend it opens. Everything that happens while
// the command runs (the lease, its loss, exit 70) is withlock.Run's,
// through lockset.Leased.
type driver struct{}

func (driver) Name() string { return "etcd" }

// The environment's names for the etcd flags (a flag wins over its
// variable). The password has a variable and a file, never a flag.
const (
	envEndpoints    = "WITHLOCK_ETCD_ENDPOINTS"
	envKeyRoot      = "WITHLOCK_KEY_ROOT"
	envCAFile       = "WITHLOCK_ETCD_CA_FILE"
	envCertFile     = "WITHLOCK_ETCD_CERT_FILE"
	envKeyFile      = "WITHLOCK_ETCD_KEY_FILE"
	envServerName   = "WITHLOCK_ETCD_SERVER_NAME"
	envUser         = "WITHLOCK_ETCD_USER"
	envPasswordFile = "WITHLOCK_ETCD_PASSWORD_FILE"
	envPassword     = "WITHLOCK_ETCD_PASSWORD"
)

// options names withlock-etcd's options in messages.
var options = etcdclient.Options{
	Endpoints:    "--endpoints",
	TLS:          "--ca-file, --cert-file, --key-file and --server-name",
	User:         "--etcd-user",
	Password:     "give it with --password-file FILE (mode 0600) or $" + envPassword,
	PasswordFile: "--password-file",
}

// Configure applies the etcd defaults (from the environment, else the
// built-in ones) that withlock's struct leaves empty, then checks them. It
// reads the password (from --password-file, else $WITHLOCK_ETCD_PASSWORD)
// and takes $WITHLOCK_ETCD_PASSWORD out of the environment, so that the
// command does not inherit it.
func (driver) Configure(o *wc.Options) error {
	if len(o.Endpoints) == 0 {
		if v := os.Getenv(envEndpoints); v != "" {
			o.Endpoints = strings.Split(v, ",")
		} else {
			o.Endpoints = []string{etcdlock.DefaultEndpoint}
		}
	}
	fromEnv(&o.KeyRoot, envKeyRoot)
	if o.KeyRoot == "" {
		o.KeyRoot = "/"
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = etcdlock.DefaultPrefix
	}
	if o.TTL == 0 {
		o.TTL = etcdlock.DefaultTTL
	}
	if o.OnCoordinatorDown == "" {
		o.OnCoordinatorDown = "fail"
	}
	for _, f := range []struct {
		v   *string
		env string
	}{{&o.CAFile, envCAFile}, {&o.CertFile, envCertFile}, {&o.KeyFile, envKeyFile}, {&o.ServerName, envServerName},
		{&o.EtcdUser, envUser}, {&o.PasswordFile, envPasswordFile}} {
		fromEnv(f.v, f.env)
	}
	switch {
	case o.TTL < 2*time.Second || o.TTL%time.Second != 0:
		return wc.UsageError{Msg: fmt.Sprintf("--ttl %v: etcd leases have whole seconds, at least 2s", o.TTL)}
	case o.OnCoordinatorDown != "fail" && o.OnCoordinatorDown != "skip":
		return wc.UsageError{Msg: fmt.Sprintf("--on-coordinator-down %q: use fail or skip", o.OnCoordinatorDown)}
	}
	if _, err := lockDelay(o.LockDelay); err != nil {
		return err
	}
	if _, err := etcdclient.Endpoints(o.Endpoints, "--endpoints"); err != nil {
		return wc.UsageError{Msg: err.Error()}
	}
	sec, err := security(o)
	if err != nil {
		return err
	}
	if err := sec.Check(o.Endpoints, options); err != nil {
		return wc.UsageError{Msg: err.Error()}
	}
	configured = sec
	return nil
}

// configured is the security Configure gathered, for Open (the password
// is read once, and its variable is gone from the environment by then).
var configured etcdclient.Security

// fromEnv sets *v from the variable env when the flag left it empty.
func fromEnv(v *string, env string) {
	if *v == "" {
		*v = os.Getenv(env)
	}
}

// lockDelay parses --lock-delay with the one duration rule
// (runner.ParseDuration): "" is the default, 0s none. It is a string, not a
// duration flag, because "" (the default) and 0s (none) differ.
func lockDelay(s string) (time.Duration, error) {
	if s == "" {
		return etcdlock.DefaultLockDelay, nil
	}
	d, err := runner.ParseDuration(s)
	if err != nil || d < 0 || d%time.Second != 0 {
		return 0, wc.UsageError{Msg: fmt.Sprintf("--lock-delay %q: give whole seconds, 0s for none (etcd leases have whole seconds)", s)}
	}
	return d, nil
}

// security gathers the TLS and auth options, and the password: the file
// wins over the variable, which is removed from the environment either
// way (the command must not inherit a secret). A password without
// --etcd-user is refused by Security.Check.
func security(o *wc.Options) (etcdclient.Security, error) {
	sec := etcdclient.Security{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, ServerName: o.ServerName, User: o.EtcdUser}
	var err error
	sec.Password, err = etcdclient.Password(o.PasswordFile, "--password-file", envPassword)
	return sec, err
}

// Open creates the client (without etcd auth it does not contact the
// cluster: an unreachable one shows up as etcdlock.ErrUnavailable when the
// locks are taken). Every key names this process as its holder.
func (driver) Open(o *wc.Options) (wc.Conn, error) {
	delay, _ := lockDelay(o.LockDelay)
	if delay == 0 {
		delay = -1 // none, as etcdlock.Config says it
	}
	out := &safetext.Printer{Prog: "withlock-etcd", Verbose: o.Verbose, Quiet: o.Quiet}
	b, err := etcdlock.New(etcdlock.Config{
		Endpoints:  o.Endpoints,
		Security:   configured,
		KeyRoot:    o.KeyRoot,
		Prefix:     o.KeyPrefix,
		TTL:        o.TTL,
		LockDelay:  delay,
		Holder:     etcdlock.Holder{Host: etcdlock.Hostname(), PID: os.Getpid(), Cmd: truncate(wc.QuoteArgs(o.Command), 200)},
		Early:      !o.Question, // who takes nothing: no lease for it
		Infof:      out.Infof,
		Warnf:      out.Warnf,
		NoVersions: o.Quiet, // -q prints no version warning: none is read
	})
	if err != nil {
		return nil, err
	}
	// A signal before the command starts ends withlock-etcd (runner's
	// guard): its leases are revoked first, so that its keys do not keep
	// others out for a TTL.
	runner.OnAbort(func() { b.Abort(etcdlock.AbortBound) })
	return conn{b, out}, nil
}

// conn is an etcdlock.Backend as withlock.Run uses it.
type conn struct {
	*etcdlock.Backend
	out *safetext.Printer
}

func (c conn) Hint(err error) string {
	switch {
	case errors.Is(err, etcdlock.ErrOutsideRoot):
		return fmt.Sprintf("every path must be under --key-root (%s here), which names the shared tree on this host", c.Root())
	case errors.Is(err, etcdclient.ErrLogin):
		return "check --etcd-user and the password (--password-file or $" + envPassword + ")"
	}
	return ""
}

func (c conn) Notes() []string {
	if n := c.Rereads.Load(); n > 0 {
		return []string{fmt.Sprintf("%d lock transaction(s) timed out and were read back to learn their outcome", n)}
	}
	return nil
}

func (c conn) Holding(h lockset.Held) string {
	f := h.(etcdlock.Fenced)
	return fmt.Sprintf("%s in etcd (lease %x, revision %d)", wc.HoldingText(h, "path", "under "+c.Root()), f.Lease(), f.Revision())
}

// Env is the fencing token and the paths' names relative to the key root
// (docs/etcd.md, "The fencing contract"); WITHLOCK_KEY_PATHS is left out when
// longer than withlock's limit for WITHLOCK_PATHS in the environment.
func (conn) Env(h lockset.Held) []string {
	f := h.(etcdlock.Fenced)
	env := []string{
		"WITHLOCK_FENCE_LEASE=" + strconv.FormatInt(f.Lease(), 16),
		"WITHLOCK_FENCE_REVISION=" + strconv.FormatInt(f.Revision(), 10),
	}
	if rel := wc.JSONPaths(f.RelPaths()); len(rel) <= wc.MaxEnvPaths {
		env = append(env, "WITHLOCK_KEY_PATHS="+string(rel))
	}
	return env
}

// Close warns, once per call, when a member runs a server older than the
// minimum safe version (read while the locks were taken and held), unless
// -q.
func (c conn) Close() {
	if w := c.VersionWarning(time.Second); w != "" && !c.out.Quiet {
		c.out.Warnf("%s", w)
	}
	// The client is not closed: withlock-etcd exits right after, and the
	// kernel closes its connections at once, where closing them one by one
	// would only keep the call waiting (about 2 ms under load). The
	// lease is revoked already, or left to expire when a release failed.
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
