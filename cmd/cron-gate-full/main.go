//go:build linux

// Command cron-gate-full is cron-gate with every subcommand, kong's parser
// and the TOML decoder (package internal/crongate). cron-gate execs it for every
// line but a run whose config is cached; it execs cron-gate-etcd in turn
// for a config whose pauses are shared on etcd. See docs/cron-gate.md.
package main

import (
	"os"

	"github.com/crongate/crongate/internal/crongate"
)

func main() {
	os.Exit(crongate.Main(os.Args[1:], nil))
}
