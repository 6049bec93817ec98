//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/crongate/crongate/internal/etcdlock"
)

// --lock-delay reads durations as every other flag does (runner.ParseDuration),
// and etcd leases have whole seconds.
func TestLockDelay(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": etcdlock.DefaultLockDelay, "0s": 0, "0": 0, "7s": 7 * time.Second, "1m": time.Minute, "1d": 24 * time.Hour,
	} {
		if got, err := lockDelay(in); err != nil || got != want {
			t.Errorf("lockDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5s", "-1s", "5", "soon", "300ms"} {
		if _, err := lockDelay(in); err == nil || err.Error() != `--lock-delay "`+in+`": give whole seconds, 0s for none (etcd leases have whole seconds)` {
			t.Errorf("lockDelay(%q): %v", in, err)
		}
	}
}
