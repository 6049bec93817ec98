//go:build etcd

package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// slotKeys counts the slot keys held under prefix p.
func slotKeys(t *testing.T, p string) int { return keysUnder(t, p, "/slots/") }

// poolCase sets up a pool test: its key prefix, a temp dir, a slot
// template in it, and withlock's arguments for a pool of size slots.
func poolCase(t *testing.T, size int) (p, dir, tmpl string, pool []string) {
	t.Helper()
	need(t)
	p, dir = prefix(t), t.TempDir()
	tmpl = filepath.Join(dir, "slot-{i}.lock")
	return p, dir, tmpl, []string{"--backend", "etcd", "--key-prefix", p, "--slots", strconv.Itoa(size), "--slot-file", tmpl}
}

// freeze stops a waiter (SIGSTOP: its lease lives on until TTL + lock
// delay) and returns what thaws it, once it is stopped (the signal is
// delivered asynchronously: a waiter woken meanwhile could still take a
// slot); the test's end thaws it too.
func freeze(t *testing.T, cmd *exec.Cmd) func() {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP the waiter: %v", err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	waitFor(t, 10*time.Second, "the waiter to stop", func() bool {
		data, err := os.ReadFile(stat)
		if err != nil {
			return false
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		return len(f) > 0 && f[0] == "T"
	})
	thaw := func() { cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(thaw)
	return thaw
}

// yields runs a newcomer (no --wait) with args and checks that it yields
// to the waiter w queued for the pool tmpl: exit 75, w named.
func yields(t *testing.T, args []string, w *exec.Cmd, tmpl, what string) {
	t.Helper()
	r := run(t, nil, "withlock", append(append([]string{"-v"}, args...), "--", "true")...)
	name := fmt.Sprintf("an earlier waiter (pid %d ", w.Process.Pid)
	if r.code != 75 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "is queued for slots of pool "+tmpl) {
		t.Errorf("%s: exit %d, stderr %q; want 75, %q queued for slots of pool %s", what, r.code, r.stderr, name, tmpl)
	}
	// withlock who with the same paths and pools says so too.
	r = run(t, nil, "withlock", append([]string{"who"}, args...)...)
	name = fmt.Sprintf("\nqueued: an earlier waiter, pid %d on ", w.Process.Pid)
	if r.code != 75 || !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "reserves the free slots of pool "+tmpl+": withlock would yield to it") {
		t.Errorf("%s: withlock who: exit %d; want 75, the waiter (pid %d) named with pool %s\n%s%s", what, r.code, w.Process.Pid, tmpl, r.stdout, r.stderr)
	}
}

// proceeds runs a newcomer (no --wait) with args and checks that it ran.
func proceeds(t *testing.T, args []string, what string) {
	t.Helper()
	if r := run(t, nil, "withlock", append([]string{"who"}, args...)...); r.code != 0 || strings.Contains(r.stdout, "queued:") {
		t.Errorf("%s: withlock who: exit %d; want 0, no waiter named\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	if r := run(t, nil, "withlock", append(append([]string{}, args...), "--", "true")...); r.code != 0 {
		t.Errorf("%s: exit %d, stderr %q; want 0", what, r.code, r.stderr)
	}
}

// Fair waiting for a slot pool on etcd, without paths: a --wait waiter
// for a full pool of one is queued, and reserves the slot: once the holder
// leaves, a newcomer yields to it (exit 75, the waiter named) although the
// slot is free, while the waiter is frozen and cannot take it; thawed, the
// waiter takes it, and after it the newcomer gets in. Before, a pool-only
// waiter was not queued at all and a newcomer took the freed slot.
func TestPoolQueue(t *testing.T) {
	p, dir, tmpl, pool := poolCase(t, 1)
	release := filepath.Join(dir, "release")
	holder := holdUntil(t, pool, "/srv/pq-holder", release)
	waitFor(t, 10*time.Second, "the holder's slot", func() bool { return slotKeys(t, p) == 1 })

	out := filepath.Join(dir, "out")
	w := command(nil, "withlock", append(append([]string{}, pool...), "--ttl", "10s", "--wait", "60s",
		"--", "sh", "-c", `echo "$WITHLOCK_SLOT" > "$1"`, "sh", out)...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the pool waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	thaw := freeze(t, w)
	os.WriteFile(release, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	waitFor(t, 10*time.Second, "the holder's slot to go", func() bool { return slotKeys(t, p) == 0 })
	yields(t, pool, w, tmpl, "a newcomer on the pool its frozen waiter reserves")

	thaw()
	if err := w.Wait(); err != nil {
		t.Fatalf("the pool waiter: %v (stderr %q)", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "0\n" {
		t.Errorf("the pool waiter's command got slot %q; want 0", b)
	}
	if n := queueKeys(t, p); n != 0 {
		t.Errorf("%d queue key(s) left after the waiter ran; want none", n)
	}
	proceeds(t, pool, "a newcomer after the waiter ran")
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every process exited: %v", k)
	}
}

// A waiter with paths and a pool of two reserves one slot: queued while
// both slots are held, it is frozen; with one slot freed (free 1, one
// reservation) a newcomer on a disjoint path and the pool yields to it,
// with both freed (free 2) the newcomer gets in at once, and the thawed
// waiter then takes the other slot. Before, the waiter's queue key named
// its paths only and the newcomer took the first freed slot.
func TestPoolQueueWithPaths(t *testing.T) {
	p, dir, tmpl, pool := poolCase(t, 2)
	rel1, rel2 := filepath.Join(dir, "release-1"), filepath.Join(dir, "release-2")
	h1 := holdUntil(t, pool, "/srv/pqp-h1", rel1)
	h2 := holdUntil(t, pool, "/srv/pqp-h2", rel2)
	waitFor(t, 10*time.Second, "both slots held", func() bool { return slotKeys(t, p) == 2 })

	w := command(nil, "withlock", append(append([]string{}, pool...), "--paths", "/srv/pqp-w", "--ttl", "10s", "--wait", "60s", "--", "true")...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	thaw := freeze(t, w)
	newcomer := append(append([]string{}, pool...), "--paths", "/srv/pqp-n")
	os.WriteFile(rel1, nil, 0o644)
	if err := h1.Wait(); err != nil {
		t.Fatalf("holder 1: %v", err)
	}
	waitFor(t, 10*time.Second, "one slot freed", func() bool { return slotKeys(t, p) == 1 })
	yields(t, newcomer, w, tmpl, "one slot free, reserved by the frozen waiter")

	os.WriteFile(rel2, nil, 0o644)
	if err := h2.Wait(); err != nil {
		t.Fatalf("holder 2: %v", err)
	}
	waitFor(t, 10*time.Second, "both slots freed", func() bool { return slotKeys(t, p) == 0 })
	proceeds(t, newcomer, "two slots free, one reserved: a newcomer while the waiter is frozen")
	if n := queueKeys(t, p); n != 1 {
		t.Errorf("%d queue key(s) while the waiter is frozen; want its one", n)
	}

	thaw()
	if err := w.Wait(); err != nil {
		t.Fatalf("the waiter: %v (stderr %q)", err, stderr.String())
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every process exited: %v", k)
	}
}

// A pool waiter killed with SIGKILL while queued reserves its slot until
// its lease ends (TTL 2 s + lock delay 4 s: long enough for the newcomer
// to see it), then nobody yields to it.
func TestPoolQueueWaiterKilled(t *testing.T) {
	p, dir, tmpl, pool := poolCase(t, 1)
	release := filepath.Join(dir, "release")
	holder := holdUntil(t, pool, "/srv/pqk-holder", release)
	waitFor(t, 10*time.Second, "the holder's slot", func() bool { return slotKeys(t, p) == 1 })
	dead := command(nil, "withlock", append(append([]string{}, pool...), "--ttl", "2s", "--lock-delay", "4s", "--wait", "60s", "--", "true")...)
	startWaiter(t, dead)
	waitFor(t, 20*time.Second, "the doomed waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	// withlock execs withlock-etcd, which keeps the pid: the waiter itself.
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	os.WriteFile(release, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	waitFor(t, 10*time.Second, "the holder's slot to go", func() bool { return slotKeys(t, p) == 0 })
	if queueKeys(t, p) == 1 {
		yields(t, pool, dead, tmpl, "a newcomer behind the killed waiter, its lease alive")
	} else {
		t.Errorf("the killed waiter's queue key went before the newcomer could try (its lease lives 6 s)")
	}
	waitFor(t, 30*time.Second, "the killed waiter's queue key to go with its lease", func() bool { return queueKeys(t, p) == 0 })
	proceeds(t, pool, "a newcomer after the killed waiter's lease ended")
}

// queuedPools returns the pools that the queue values under prefix p
// reserve a slot of.
func queuedPools(t *testing.T, p string) []string {
	t.Helper()
	cli, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, p+"/queue/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var pools []string
	for _, kv := range r.Kvs {
		var v struct {
			Pools []string `json:"pools"`
		}
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			t.Fatalf("queue value %q: %v", kv.Value, err)
		}
		pools = append(pools, v.Pools...)
	}
	return pools
}

// A waiter reserves a slot only of the pool it waits for: one whose path
// is held by another, its pool free, keeps no slot from newcomers (its
// queue value lists no pool), and gets in when the path frees. With the
// pool full, a waiter on a free path reserves it.
func TestPoolQueueReservesOnlyWhatItWaitsFor(t *testing.T) {
	p, dir, tmpl, pool := poolCase(t, 1)
	base := pool[:4] // --backend etcd --key-prefix p
	relPath := filepath.Join(dir, "release-path")
	hp := holdUntil(t, base, "/srv/pqr-x", relPath)
	waitFor(t, 10*time.Second, "the path's holder", func() bool { return len(keys(t, p)) == 1 })

	w := command(nil, "withlock", append(append([]string{}, pool...), "--paths", "/srv/pqr-x", "--ttl", "10s", "--wait", "60s", "--", "true")...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	if qp := queuedPools(t, p); len(qp) != 0 {
		t.Errorf("a waiter for a held path reserves %v; want no pool", qp)
	}
	proceeds(t, pool, "a newcomer on the pool while the waiter waits for its path")

	os.WriteFile(relPath, nil, 0o644)
	if err := hp.Wait(); err != nil {
		t.Fatalf("the path's holder: %v", err)
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("the waiter: %v (stderr %q)", err, stderr.String())
	}

	// The pool full, the path free: the waiter reserves the pool.
	relSlot := filepath.Join(dir, "release-slot")
	hs := holdUntil(t, pool, "/srv/pqr-h", relSlot)
	waitFor(t, 10*time.Second, "the slot's holder", func() bool { return slotKeys(t, p) == 1 })
	w2 := command(nil, "withlock", append(append([]string{}, pool...), "--paths", "/srv/pqr-y", "--ttl", "10s", "--wait", "60s", "--", "true")...)
	stderr2 := startWaiter(t, w2)
	waitFor(t, 20*time.Second, "the second waiter to reserve the pool", func() bool { return len(queuedPools(t, p)) == 1 })
	thaw := freeze(t, w2)
	os.WriteFile(relSlot, nil, 0o644)
	if err := hs.Wait(); err != nil {
		t.Fatalf("the slot's holder: %v", err)
	}
	waitFor(t, 10*time.Second, "the slot to go", func() bool { return slotKeys(t, p) == 0 })
	yields(t, pool, w2, tmpl, "a newcomer on the pool the frozen waiter reserves")
	thaw()
	if err := w2.Wait(); err != nil {
		t.Fatalf("the second waiter: %v (stderr %q)", err, stderr2.String())
	}
}

// A waiter for two pools keeps the slot of the first reserved while it
// waits for the second (as on the local backend): pools P and Q of one
// slot, both held; the waiter reserves P, then P frees with Q still held:
// it reserves both. Frozen, it cannot take P; a newcomer on P yields.
func TestPoolQueueReservesEveryFullPool(t *testing.T) {
	p, dir, tmplP, poolP := poolCase(t, 1)
	tmplQ := filepath.Join(dir, "q-{i}.lock")
	poolQ := append(append([]string{}, poolP[:4]...), "--slots", "1", "--slot-file", tmplQ)
	relP, relQ := filepath.Join(dir, "release-p"), filepath.Join(dir, "release-q")
	hp := holdUntil(t, poolP, "/srv/pqe-hp", relP)
	hq := holdUntil(t, poolQ, "/srv/pqe-hq", relQ)
	waitFor(t, 10*time.Second, "both pools held", func() bool { return slotKeys(t, p) == 2 })

	w := command(nil, "withlock", append(append(append([]string{}, poolP...), poolQ[4:]...), "--ttl", "10s", "--wait", "60s", "--", "true")...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter to reserve a pool", func() bool { return len(queuedPools(t, p)) == 1 })
	os.WriteFile(relP, nil, 0o644)
	if err := hp.Wait(); err != nil {
		t.Fatalf("P's holder: %v", err)
	}
	waitFor(t, 20*time.Second, "the waiter to reserve both pools", func() bool { return len(queuedPools(t, p)) == 2 })
	thaw := freeze(t, w)
	waitFor(t, 10*time.Second, "P free", func() bool { return slotKeys(t, p) == 1 })
	yields(t, poolP, w, tmplP, "a newcomer on P, reserved by the frozen waiter for P and Q")
	thaw()
	os.WriteFile(relQ, nil, 0o644)
	if err := hq.Wait(); err != nil {
		t.Fatalf("Q's holder: %v", err)
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("the waiter: %v (stderr %q)", err, stderr.String())
	}
}

// A waiter that needs two slots of one pool (the same --slot-file twice)
// reserves two (found by an attack session: it reserved one, and a later
// waiter for one slot overtook it): both slots held, the waiter queued and
// frozen, both freed: a newcomer yields.
func TestPoolQueueTwiceReservesTwo(t *testing.T) {
	p, dir, tmpl, pool := poolCase(t, 2)
	rel1, rel2 := filepath.Join(dir, "release-1"), filepath.Join(dir, "release-2")
	h1 := holdUntil(t, pool, "/srv/pqt-h1", rel1)
	h2 := holdUntil(t, pool, "/srv/pqt-h2", rel2)
	waitFor(t, 10*time.Second, "both slots held", func() bool { return slotKeys(t, p) == 2 })
	w := command(nil, "withlock", append(append(append([]string{}, pool...), pool[4:]...), "--ttl", "10s", "--wait", "60s", "--", "true")...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter to reserve two slots", func() bool { return len(queuedPools(t, p)) == 2 })
	thaw := freeze(t, w)
	for _, h := range []struct {
		rel string
		cmd *exec.Cmd
	}{{rel1, h1}, {rel2, h2}} {
		os.WriteFile(h.rel, nil, 0o644)
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("a holder: %v", err)
		}
	}
	waitFor(t, 10*time.Second, "both slots free", func() bool { return slotKeys(t, p) == 0 })
	yields(t, pool, w, tmpl, "two free, two reserved by the frozen waiter")
	thaw()
	if err := w.Wait(); err != nil {
		t.Fatalf("the waiter: %v (stderr %q)", err, stderr.String())
	}
}
