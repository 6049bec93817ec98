//go:build etcd

package etcd

import (
	"context"
	"testing"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/etcdpause"
)

// What the run path pays for the shared pause in-process: one Get (a
// linearizable read); and what pause/resume pay. Run with
//
//	go test -tags etcd -run '^$' -bench Pause ./tests/etcd/
func BenchmarkPauseGet(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if err := s.Set(ctx, "g", gate.Pause{Reason: "bench"}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if p, err := s.Get(ctx, "g"); err != nil || p == nil {
			b.Fatal(p, err)
		}
	}
}

// Open + Get + Close: one run of cron-gate-etcd, without the exec.
func BenchmarkPauseOpenGetClose(b *testing.B) {
	benchStore(b)
	ctx := context.Background()
	for b.Loop() {
		s, err := etcdpause.Open(etcdpause.Config{Endpoints: cl.Endpoints(), Prefix: "/bench"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, "g"); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

func BenchmarkPauseSetClear(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for b.Loop() {
		if err := s.Set(ctx, "h", gate.Pause{Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Clear(ctx, "h"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStore(b *testing.B) *etcdpause.Store {
	if skipAll != "" {
		b.Skip(skipAll)
	}
	if err := cl.WaitHealthy(30e9); err != nil {
		b.Fatal(err)
	}
	s, err := etcdpause.Open(etcdpause.Config{Endpoints: cl.Endpoints(), Prefix: "/bench", Who: "bench@host"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
