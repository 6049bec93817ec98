//go:build etcd

package etcd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slotKeys counts the slot keys held under prefix p.
func slotKeys(t *testing.T, p string) int {
	n := 0
	for k := range keys(t, p) {
		if strings.HasPrefix(k, p+"/slots/") {
			n++
		}
	}
	return n
}

// freeze stops a waiter (SIGSTOP: its lease lives on until TTL + lock
// delay) and returns what thaws it; the test's end thaws it too.
func freeze(t *testing.T, cmd *exec.Cmd) func() {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP the waiter: %v", err)
	}
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
}

// proceeds runs a newcomer (no --wait) with args and checks that it ran.
func proceeds(t *testing.T, args []string, what string) {
	t.Helper()
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
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "slot-{i}.lock")
	pool := []string{"--backend", "etcd", "--key-prefix", p, "--slots", "1", "--slot-file", tmpl}
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
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "slot-{i}.lock")
	pool := []string{"--backend", "etcd", "--key-prefix", p, "--slots", "2", "--slot-file", tmpl}
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
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "slot-{i}.lock")
	pool := []string{"--backend", "etcd", "--key-prefix", p, "--slots", "1", "--slot-file", tmpl}
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
