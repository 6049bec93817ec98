//go:build linux

// Command cron-gate-etcd is cron-gate with the etcd client linked in: for
// a config with an [etcd] section, the command-line pauses live in the
// cluster and apply to every host (package etcdpause). cron-gate execs it
// for such configs; it is never on the path of a config without [etcd].
// See docs/etcd.md, "Across hosts (etcd)".
package main

import (
	"os"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/crongate"
	"github.com/crongate/crongate/internal/etcdclient"
	"github.com/crongate/crongate/internal/etcdpause"
)

func main() {
	etcdclient.OneP()
	os.Exit(crongate.Main(os.Args[1:], open))
}

// envPassword holds [etcd] user's password when password_file is not set.
const envPassword = "CRON_GATE_ETCD_PASSWORD"

// open opens the config's shared pause store. Without etcd auth it does
// not contact the cluster: each call is bounded by [etcd] timeout. The
// password is read from password_file, else $CRON_GATE_ETCD_PASSWORD,
// which is taken out of the environment either way: the gated command does
// not inherit it.
func open(cfg *gate.Config) (gate.PauseStore, func(), error) {
	e := &cfg.Etcd
	sec := etcdclient.Security{CAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile, ServerName: e.ServerName, User: e.User}
	pw, err := etcdclient.Password(e.PasswordFile, "[etcd] password_file", envPassword)
	if err != nil {
		return nil, nil, err
	}
	sec.Password = pw
	eps, _ := etcdclient.Endpoints(e.Endpoints, "[etcd] endpoints")
	if err := sec.Check(eps, etcdclient.Options{
		Endpoints:    "[etcd] endpoints",
		TLS:          "[etcd] ca_file, cert_file, key_file and server_name",
		User:         "[etcd] user",
		Password:     "set [etcd] password_file (mode 0600) or $" + envPassword,
		PasswordFile: "[etcd] password_file",
	}); err != nil {
		return nil, nil, err
	}
	s, err := etcdpause.Open(etcdpause.Config{
		Endpoints: e.Endpoints,
		Security:  sec,
		Prefix:    e.Prefix,
		Timeout:   e.TimeoutOr(),
	})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}
