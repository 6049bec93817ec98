//go:build linux

// Command withlock runs a command while holding per-path flock locks that
// are byte-compatible with the user's Python workers, plus concurrency
// slots, all or nothing. See README.md for the contract.
//
// This is the binary cron runs on every tick: it links no CLI library and
// parses the common command lines itself; anything else (help, errors,
// rare forms) is handed to withlock-full, which parses with kong.
package main

import (
	"os"

	"github.com/crongate/crongate/internal/withlockcmd"
	"github.com/crongate/crongate/runner"
)

func main() {
	// Signals first: until the command starts, one ends withlock with
	// 128+N (runner.Notify); a hand-off to withlock-etcd keeps one caught
	// before the exec (runner.HandOff).
	sigs := runner.Notify()
	// --backend etcd (or WITHLOCK_BACKEND=etcd): exec withlock-etcd with
	// the same argv before anything else (backend.go). The local path pays
	// one scan of the flags for it.
	if code, done := dispatch(os.Args[1:], sigs); done {
		os.Exit(code)
	}
	os.Exit(withlockcmd.Main(os.Args[1:]))
}
