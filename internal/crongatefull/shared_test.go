package crongatefull

import (
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

// The store cron-gate-etcd opened is attached only to configs whose [etcd]
// section is the one it was opened for (serve re-reads its config).
func TestAttachSharedOnlyForSameEtcd(t *testing.T) {
	defer func(s gate.SharedPauses, f gate.EtcdConfig) { shared, sharedFor = s, f }(shared, sharedFor)
	opened := gate.EtcdConfig{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second}
	shared, sharedFor = nil, opened
	with := func(e gate.EtcdConfig) *gate.Config { c := gate.DefaultConfig(); c.Etcd = e; return c }
	if !attachShared(gate.DefaultConfig()) {
		t.Fatal("a config without [etcd] needs no store")
	}
	if attachShared(with(opened)) {
		t.Fatal("attached a store this binary does not have")
	}
	shared = struct{ gate.SharedPauses }{}
	if c := with(opened); !attachShared(c) || c.Shared == nil {
		t.Fatal("the same [etcd] must get the store")
	}
	for _, e := range []gate.EtcdConfig{
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p2", Timeout: time.Second},
		{Endpoints: []string{"http://e2:2379"}, Prefix: "/p1", Timeout: time.Second},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: 2 * time.Second},
		{Endpoints: []string{"http://e1:2379"}, Prefix: "/p1", Timeout: time.Second, RunOnDown: true},
	} {
		if c := with(e); attachShared(c) || c.Shared != nil {
			t.Errorf("store opened for %+v attached to %+v", opened, e)
		}
	}
}
