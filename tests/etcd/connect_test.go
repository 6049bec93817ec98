//go:build etcd

package etcd

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A call connects to every member once (etcd's client: one connection
// each, requests in turn over them). The first call of a fresh cache dir
// also reads every member's version (a connection of its own to each);
// the next ones read the versions from the cache, and warn as the first
// did.
func TestConnectionsPerCall(t *testing.T) {
	need(t)
	pt := newPartition(t) // cut from nobody: it counts the connections
	cache := t.TempDir()
	env := []string{"WITHLOCK_ETCD_ENDPOINTS=" + pt.Endpoints(), "XDG_CACHE_HOME=" + cache}
	args := []string{"--backend", "etcd", "--key-prefix", prefix(t), "--paths", "/srv/one", "--", "true"}
	counts := func() []int32 {
		n := make([]int32, len(pt.accepted))
		for i := range pt.accepted {
			n[i] = pt.accepted[i].Swap(0)
		}
		return n
	}
	// -q prints no version warning, and reads no version: one
	// connection per member, even without a cache, and no cache written.
	q := run(t, env, "withlock", append([]string{"-q"}, args...)...)
	if n := counts(); q.code != 0 || q.stderr != "" || slices.ContainsFunc(n, func(c int32) bool { return c != 1 }) {
		t.Errorf("-q: exit %d, connections per member %v (want 1 each), stderr %q", q.code, n, q.stderr)
	}
	if _, err := os.Stat(filepath.Join(cache, "withlock")); err == nil {
		t.Errorf("-q wrote the version cache")
	}
	first := run(t, env, "withlock", args...)
	if first.code != 0 {
		t.Fatalf("exit %d: %s", first.code, first.stderr)
	}
	if n := counts(); slices.ContainsFunc(n, func(c int32) bool { return c != 2 }) {
		t.Errorf("the first call made %v connections per member, want 2 each (the client's, and one to read the version)", n)
	}
	for range 4 {
		r := run(t, env, "withlock", args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if r.stderr != first.stderr {
			t.Errorf("stderr %q, want the first call's %q (the version warning, from the cache)", r.stderr, first.stderr)
		}
		if n := counts(); slices.ContainsFunc(n, func(c int32) bool { return c != 1 }) {
			t.Errorf("a call with the versions cached made %v connections per member, want 1 each", n)
		}
	}
}

// A member that accepts connections and never answers (its host froze, a
// dropped route) costs a call nothing: its requests go to the members
// that answer.
func TestHungMemberPassedOver(t *testing.T) {
	need(t)
	pt := newPartition(t)
	pt.CutMember(0)
	env := []string{"WITHLOCK_ETCD_ENDPOINTS=" + pt.Endpoints(), "XDG_CACHE_HOME=" + t.TempDir()}
	for i := range 30 {
		before := pt.accepted[0].Load()
		r := run(t, env, "withlock", "--backend", "etcd", "--key-prefix", prefix(t), "--paths", "/srv/hung", "--", "true")
		if r.code != 0 {
			t.Fatalf("call %d (the hung member tried: %v): exit %d: %s", i, pt.accepted[0].Load() > before, r.code, r.stderr)
		}
	}
	// Every call connected to the hung member too: it was in play.
	if n := pt.accepted[0].Load(); n < 30 {
		t.Errorf("the hung member was connected to %d time(s) over 30 calls, want every call", n)
	}
}
