//go:build linux

// Command cron-gate-etcd is cron-gate-full with the etcd client linked in:
// for a config with an [etcd] section, the command-line pauses live in the
// cluster and apply to every host (package etcdpause). cron-gate and
// cron-gate-full exec it for such configs; it is never on the path of a
// config without [etcd]. See docs/etcd.md, "Across hosts (etcd)".
package main

import (
	"os"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/pauses"
	"github.com/crongate/crongate/internal/crongate/full"
	"github.com/crongate/crongate/internal/etcdpause"
)

func main() {
	os.Exit(full.Main(os.Args[1:], open))
}

// open opens the config's shared pause store. It does not contact the
// cluster: each call is bounded by [etcd] timeout.
func open(cfg *gate.Config) (pauses.Store, func(), error) {
	s, err := etcdpause.Open(etcdpause.Config{
		Endpoints: cfg.Etcd.Endpoints,
		Prefix:    cfg.Etcd.Prefix,
		Timeout:   cfg.Etcd.TimeoutOr(),
	})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}
