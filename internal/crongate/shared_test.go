package crongate

import (
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

// The store cron-gate-etcd opened serves only configs whose [etcd] section
// is the one it was opened for (serve re-reads its config); a config
// without [etcd] needs none.
func TestEtcdUnchanged(t *testing.T) {
	opened := gate.EtcdConfig{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second}
	with := func(e gate.EtcdConfig) *gate.Config { c := gate.DefaultConfig(); c.Etcd = e; return c }
	if !etcdUnchanged(gate.DefaultConfig(), nil) || !etcdUnchanged(gate.DefaultConfig(), &opened) {
		t.Fatal("a config without [etcd] needs no store")
	}
	if etcdUnchanged(with(opened), nil) {
		t.Fatal("a config with [etcd] accepted without a store")
	}
	if !etcdUnchanged(with(opened), &opened) {
		t.Fatal("the same [etcd] must do with the store")
	}
	for _, e := range []gate.EtcdConfig{
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p2", Timeout: time.Second},
		{Endpoints: []string{"http://e2:2379"}, Prefix: "/p1", Timeout: time.Second},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: 2 * time.Second},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second, RunOnDown: true},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second, User: "u", PasswordFile: "/pw"},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second, CAFile: "/ca.pem"},
	} {
		if etcdUnchanged(with(e), &opened) {
			t.Errorf("store opened for %+v accepted for %+v", opened, e)
		}
	}
}
