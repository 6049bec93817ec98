//go:build linux

// Command withlock-etcd is withlock's etcd backend: the same command line
// and the same guarantees as withlock, with the locks held as keys in an
// etcd cluster so that several hosts exclude each other. withlock execs it
// for --backend etcd (or WITHLOCK_BACKEND=etcd); it is a binary of its own so
// that the local withlock never links the etcd client. It runs withlock's
// one run loop (withlock.Run) with the etcd Driver (driver.go). See
// docs/etcd.md, "Across hosts (etcd)".
package main

import (
	"os"

	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/withlock"
)

const description = `Run COMMAND while holding per-path locks and concurrency slots in an etcd
cluster, all or nothing, so that withlock on several hosts exclude each other.
withlock --backend etcd runs this program with the same arguments; see docs/etcd.md,
"Across hosts (etcd)".

Exit codes: the command's own; 75 (--skip-code) skipped because busy, or the
cluster is down under --on-coordinator-down skip; 70 the lease was lost and
the command was stopped; 124 timed out; 125 our own failure (by default also
an unreachable cluster); 126 not executable; 127 not found; 128+N the
command died of signal N.`

func main() {
	etcdclient.OneP()
	runner.Exit(withlock.Serve(withlock.Program{
		Name:        "withlock-etcd",
		Description: description,
		Usage:       "Usage: withlock --backend etcd [flags] -- COMMAND [ARG...]",
	}, driver{}, os.Args[1:]))
}
