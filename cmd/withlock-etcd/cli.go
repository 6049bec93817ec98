//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/crongate/crongate/etcdlock"
	wc "github.com/crongate/crongate/internal/withlockcmd"
	"github.com/crongate/crongate/internal/withlockkong"
)

// options is withlock's parsed command line: withlock execs this binary
// with its own argv, so both parse the same struct (withlockcmd.CLI, which
// also documents the etcd flags in withlock --help).
type options struct {
	wc.Options
}

const description = `Run COMMAND while holding per-path locks and concurrency slots in an etcd
cluster, all or nothing, so that withlock on several hosts exclude each other.
withlock --backend etcd runs this program with the same arguments; see README,
"Across hosts (etcd)".

Exit codes: the command's own; 75 (--skip-code) skipped because busy, or the
cluster is down under --on-coordinator-down skip; 70 the lease was lost and
the command was stopped; 124 timed out; 125 our own failure (by default also
an unreachable cluster); 126 not executable; 127 not found; 128+N the
command died of signal N.`

// parse parses the command line with kong, then applies the etcd defaults
// (from the environment, else the built-in ones) that withlock's struct
// leaves empty.
func parse(args []string, stdout io.Writer, exit func(int)) (*options, error) {
	wc.EtcdParse = true
	var o options
	err := withlockkong.Parse(withlockkong.Program{
		Name:        "withlock-etcd",
		Description: description,
		Usage:       "Usage: withlock --backend etcd [flags] -- COMMAND [ARG...]",
	}, args, &o.Options, stdout, exit, o.validate)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// validate applies the etcd defaults, then withlock's checks, then the
// etcd ones.
func (o *options) validate(found bool) error {
	if o.Backend == "" {
		o.Backend = os.Getenv("WITHLOCK_BACKEND")
	}
	if o.Backend == "" {
		o.Backend = "etcd"
	}
	if o.Backend != "etcd" {
		return wc.UsageError{Msg: fmt.Sprintf("--backend %q: withlock-etcd is the etcd backend; run withlock for the local one", o.Backend)}
	}
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
	if err := o.Validate(found); err != nil {
		return err
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
