//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/etcdlock"
	"github.com/crongate/crongate/internal/lockset"
	wc "github.com/crongate/crongate/internal/withlock"
)

// driver is the etcd backend's withlock.Driver: its flags' defaults and
// checks, and the etcdlock.Backend it opens. Everything that happens while
// the command runs (the lease, its loss, exit 70) is withlock.Run's,
// through lockset.Leased.
type driver struct{}

func (driver) Name() string { return "etcd" }

// Configure applies the etcd defaults (from the environment, else the
// built-in ones) that withlock's struct leaves empty, then checks them.
func (driver) Configure(o *wc.Options) error {
	if len(o.Endpoints) == 0 {
		if v := os.Getenv("WITHLOCK_ETCD_ENDPOINTS"); v != "" {
			o.Endpoints = strings.Split(v, ",")
		} else {
			o.Endpoints = []string{etcdlock.DefaultEndpoint}
		}
	}
	if o.KeyRoot == "" {
		o.KeyRoot = os.Getenv("WITHLOCK_KEY_ROOT")
	}
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
	switch {
	case o.TTL < 2*time.Second || o.TTL%time.Second != 0:
		return wc.UsageError{Msg: fmt.Sprintf("--ttl %v: etcd leases have whole seconds, at least 2s", o.TTL)}
	case o.OnCoordinatorDown != "fail" && o.OnCoordinatorDown != "skip":
		return wc.UsageError{Msg: fmt.Sprintf("--on-coordinator-down %q: use fail or skip", o.OnCoordinatorDown)}
	}
	for _, e := range o.Endpoints {
		if e == "" {
			return wc.UsageError{Msg: "--endpoints has an empty entry (stray comma?)"}
		}
	}
	return nil
}

// Open creates the client (it does not contact the cluster: an unreachable
// one shows up as etcdlock.ErrUnavailable when the locks are taken). Every
// key names this process as its holder.
func (driver) Open(o *wc.Options) (wc.Conn, error) {
	b, err := etcdlock.New(etcdlock.Config{
		Endpoints: o.Endpoints,
		KeyRoot:   o.KeyRoot,
		Prefix:    o.KeyPrefix,
		TTL:       o.TTL,
		Holder:    etcdlock.Holder{Host: etcdlock.Hostname(), PID: os.Getpid(), Cmd: truncate(wc.QuoteArgs(o.Command), 200)},
	})
	if err != nil {
		return nil, err
	}
	return conn{b}, nil
}

// conn is an etcdlock.Backend as withlock.Run uses it.
type conn struct{ *etcdlock.Backend }

func (c conn) Hint(err error) string {
	if errors.Is(err, etcdlock.ErrOutsideRoot) {
		return fmt.Sprintf("every path must be under --key-root (%s here), which names the shared tree on this host", c.Root())
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

func (c conn) Close() { c.Backend.Close() }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
