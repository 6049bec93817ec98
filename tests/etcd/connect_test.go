//go:build etcd

package etcd

import (
	"os"
	"path/filepath"
	"testing"
)

// A call talks to one member: one connection, to a member picked at
// random. The first call of a fresh cache dir also reads every member's
// version (a connection to each); the next ones read the others' from the
// version cache, and warn as the first did.
func TestOneMemberPerCall(t *testing.T) {
	need(t)
	pt := newPartition(t) // cut from nobody: it counts the connections
	cache := t.TempDir()
	env := []string{"WITHLOCK_ETCD_ENDPOINTS=" + pt.Endpoints(), "XDG_CACHE_HOME=" + cache}
	args := []string{"--backend", "etcd", "--key-prefix", prefix(t), "--paths", "/srv/one", "--", "true"}
	// -q prints no version warning, and reads no version: one
	// connection, even without a cache, and no cache written.
	q := run(t, env, "withlock", append([]string{"-q"}, args...)...)
	total := 0
	for i := range pt.accepted {
		total += int(pt.accepted[i].Swap(0))
	}
	if q.code != 0 || q.stderr != "" || total != 1 {
		t.Errorf("-q: exit %d, %d connections (want 1), stderr %q", q.code, total, q.stderr)
	}
	if _, err := os.Stat(filepath.Join(cache, "withlock")); err == nil {
		t.Errorf("-q wrote the version cache")
	}
	first := run(t, env, "withlock", args...)
	if first.code != 0 {
		t.Fatalf("exit %d: %s", first.code, first.stderr)
	}
	for i := range pt.accepted {
		if pt.accepted[i].Load() == 0 {
			t.Errorf("the first call never connected to member %d: the members' versions were not all read", i)
		}
	}
	picked := map[int]bool{}
	for range 8 {
		for i := range pt.accepted {
			pt.accepted[i].Store(0)
		}
		r := run(t, env, "withlock", args...)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if r.stderr != first.stderr {
			t.Errorf("stderr %q, want the first call's %q (the version warning, from the cache)", r.stderr, first.stderr)
		}
		total := 0
		for i := range pt.accepted {
			if n := int(pt.accepted[i].Load()); n > 0 {
				total += n
				picked[i] = true
			}
		}
		if total != 1 {
			t.Errorf("the call made %d connections, want 1", total)
		}
	}
	t.Logf("members picked over 8 calls: %v", picked)
}

// A member that accepts connections and never answers (its host froze, a
// dropped route) costs a call that picked it a short wait, not its run:
// the call connects to the others and goes on.
func TestHungMemberWidens(t *testing.T) {
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
	// The first call's version check asks every member; any other
	// connection to the hung one is a call that picked it first.
	if n := pt.accepted[0].Load(); n < 2 {
		t.Errorf("the hung member was connected to %d time(s) over 30 calls: the calls do not pick their member at random", n)
	}
}
