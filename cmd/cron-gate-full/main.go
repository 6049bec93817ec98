//go:build linux

// Command cron-gate-full is cron-gate with every subcommand, kong's parser
// and the TOML decoder (package internal/crongate/full). cron-gate execs it for every
// line but a run whose config is cached; it execs cron-gate-etcd in turn
// for a config whose pauses are shared on etcd. See docs/cron-gate.md.
package main

import (
	"os"

	"github.com/crongate/crongate/internal/crongate/full"
)

func main() {
	os.Exit(full.Main(os.Args[1:], nil))
}
