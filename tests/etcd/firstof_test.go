//go:build etcd

package etcd

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withlock --first-of on etcd (tests/testdata/withlock/firstof.txtar is the
// local backend's): the first set that can be taken entirely, in the
// caller's order, under the one lease of the slots; a busy set leaves no key
// behind; none free is the skip code with the count, and leaves no key
// either (the slot given back).
func TestFirstOf(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "slot-{i}.lock")
	slotKey := fmt.Sprintf("%s/slots/%s/0", p, url.PathEscape(tmpl))
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/a\n/srv/z\n\n\n/srv/c\n\n/srv/d\n/srv/e\n"), 0o644)
	base := []string{"--backend", "etcd", "--key-prefix", p}
	first := append(append([]string{}, base...), "--first-of", "--candidates-from", cands, "--slots", "1", "--slot-file", tmpl)

	r := run(t, nil, "withlock", append(first, "--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE $WITHLOCK_PATHS $WITHLOCK_SLOT"`)...)
	if r.code != 0 || r.stdout != "0 [\"/srv/a\",\"/srv/z\"] 0\n" {
		t.Fatalf("everything free: exit %d, stdout %q, stderr %q; want set 0", r.code, r.stdout, r.stderr)
	}

	// z and d held by others: set 0 and set 2 busy, set 1 taken; while its
	// command runs, the keys are z's and d's, c's and the slot's, c and the
	// slot under one lease: nothing of set 0 (a) is held.
	release := filepath.Join(dir, "release")
	hold := func(paths string) func() {
		cmd := command(nil, "withlock", append(append([]string{}, base...), "--paths", paths, "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return func() { cmd.Wait() }
	}
	waitZ := hold("/srv/z,/srv/d")
	waitFor(t, 10*time.Second, "z and d held", func() bool { return keys(t, p)[pathKey(p, "srv/z")] != 0 })
	inside := filepath.Join(dir, "inside")
	cmd := command(nil, "withlock", append(first, "--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE $WITHLOCK_PATHS" > "$1.tmp"; mv "$1.tmp" "$1"; while [ ! -e "$2" ]; do sleep 0.01; done`, "sh", inside, release)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "the first-of command to start", func() bool { _, err := os.Stat(inside); return err == nil })
	if b, _ := os.ReadFile(inside); string(b) != "1 [\"/srv/c\"]\n" {
		t.Errorf("z held: the command got %q; want set 1, /srv/c", b)
	}
	k := keys(t, p)
	if len(k) != 4 || k[pathKey(p, "srv/c")] == 0 || k[pathKey(p, "srv/c")] != k[slotKey] || k[pathKey(p, "srv/a")] != 0 {
		t.Errorf("keys while set 1 is held: %v; want z, d, and c with the slot under one lease", k)
	}

	// Every set busy (c held by the first-of command, whose slot fills the
	// pool: a second pool-less caller): 75, the count, no key left.
	noSlot := append(append([]string{}, base...), "-v", "--first-of", "--candidates-from", cands)
	r = run(t, nil, "withlock", append(noSlot, "--", "touch", filepath.Join(dir, "ran"))...)
	if r.code != 75 || !strings.Contains(r.stderr, "3 sets busy (the first: /srv/z is busy") {
		t.Errorf("every set busy: exit %d, stderr %q; want 75 and 3 sets busy", r.code, r.stderr)
	}
	// A full pool: 75, the pool named, before any set is tried.
	r = run(t, nil, "withlock", append(append([]string{"-v"}, first...), "--", "touch", filepath.Join(dir, "ran"))...)
	if r.code != 75 || !strings.Contains(r.stderr, "slot pool "+tmpl) {
		t.Errorf("a full pool: exit %d, stderr %q; want 75, the pool busy", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran although every set was busy")
	}
	if k2 := keys(t, p); len(k2) != 4 {
		t.Errorf("keys after two skips: %v; want only the four held before", k2)
	}
	os.WriteFile(release, nil, 0o644)
	cmd.Wait()
	waitZ()
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every holder exited: %v", k)
	}

	// A set larger than one transaction is refused up front (125).
	var big strings.Builder
	for i := range 200 {
		fmt.Fprintf(&big, "/srv/big/%d\n", i)
	}
	os.WriteFile(cands, []byte(big.String()), 0o644)
	r = run(t, nil, "withlock", append(noSlot, "--", "touch", filepath.Join(dir, "ran"))...)
	if r.code != 125 || !strings.Contains(r.stderr, "candidate set 0 has 200 paths") {
		t.Errorf("a 200-path set: exit %d, stderr %q; want 125 and the limit", r.code, r.stderr)
	}
}

// holdUntil starts a withlock holding path until the file release exists
// (or its dir is gone: a failed test leaves no process behind).
func holdUntil(t *testing.T, base []string, path, release string) *exec.Cmd {
	t.Helper()
	cmd := command(nil, "withlock", append(append([]string{}, base...), "--paths", path, "--", "sh", "-c", `while [ ! -e "$1" ] && [ -d "${1%/*}" ]; do sleep 0.02; done`, "sh", release)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// startWaiter starts a waiting withlock, its stderr kept for messages.
func startWaiter(t *testing.T, waiter *exec.Cmd) *strings.Builder {
	t.Helper()
	var stderr strings.Builder
	waiter.Stderr = &stderr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiter.Process.Kill(); waiter.Wait() })
	return &stderr
}

// releaseTo ends holder (by creating its release file) and checks that
// waiter then ran its command with the candidate want (its first word),
// which the command wrote to out.
func releaseTo(t *testing.T, release string, holder, waiter *exec.Cmd, stderr *strings.Builder, out, want string) {
	t.Helper()
	os.WriteFile(release, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("first-of waiter: %v (stderr %q)", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != strings.Fields(want)[0]+"\n" {
		t.Errorf("the waiter's command got candidate %q; want %s", b, want)
	}
}

// Two --first-of waiters whose sets are all busy send no transaction while
// nothing is released (they watch the path and queue keys; before, each
// tried every set every 250 ms), although every attempt of each takes a
// slot and gives it back; a waiter that takes a set stops watching while
// its command runs; each takes the set that is released.
func TestFirstOfWaiterIdle(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	base := []string{"--backend", "etcd", "--key-prefix", p}
	relA, relB := filepath.Join(dir, "release-a"), filepath.Join(dir, "release-b")
	holdA := holdUntil(t, base, "/srv/fa", relA)
	holdB := holdUntil(t, base, "/srv/fb", relB)
	waitFor(t, 10*time.Second, "both sets held", func() bool { return len(keys(t, p)) == 2 })
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/fa\n\n/srv/fb\n"), 0o644)
	done := filepath.Join(dir, "done")
	before := watchers(t)
	var waiters []*exec.Cmd
	var stderrs []*strings.Builder
	for i := range 2 {
		w := command(nil, "withlock", append(append([]string{}, base...), "--first-of", "--candidates-from", cands,
			"--slots", "2", "--slot-file", filepath.Join(dir, "slot-{i}"), "--wait", "60s",
			"--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE" > "$1.tmp"; mv "$1.tmp" "$1"; while [ ! -e "$2" ] && [ -d "${2%/*}" ]; do sleep 0.02; done`,
			"sh", filepath.Join(dir, fmt.Sprintf("out%d", i)), done)...)
		stderrs = append(stderrs, startWaiter(t, w))
		waiters = append(waiters, w)
	}
	if idle := idleTxns(t, before+1, "both first-of waiters to watch"); idle != 0 {
		t.Errorf("the first-of waiters sent %d transaction(s) in 2 s while nothing was released; want none", idle)
	}
	outs := func() (got []string) {
		for i := range 2 {
			if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out%d", i))); err == nil {
				got = append(got, strings.TrimSpace(string(b)))
			}
		}
		slices.Sort(got)
		return got
	}
	os.WriteFile(relB, nil, 0o644)
	holdB.Wait()
	waitFor(t, 20*time.Second, "a waiter to take /srv/fb", func() bool { return len(outs()) == 1 })
	waitFor(t, 10*time.Second, "the running waiter's watch to end", func() bool { return watchers(t) == before+1 })
	os.WriteFile(relA, nil, 0o644)
	holdA.Wait()
	waitFor(t, 20*time.Second, "the other waiter to take /srv/fa", func() bool { return len(outs()) == 2 })
	os.WriteFile(done, nil, 0o644)
	for i, w := range waiters {
		if err := w.Wait(); err != nil {
			t.Errorf("first-of waiter %d: %v (stderr %q)", i, err, stderrs[i].String())
		}
	}
	if got := outs(); !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("the waiters' commands got candidates %q; want 0 and 1", got)
	}
}

// A --first-of waiter queues for its first set: with every candidate busy
// it puts a queue key naming that set, a newcomer on a free path of the set
// yields to it while a disjoint set runs, and when the set is released the
// waiter takes it and its queue key goes.
func TestFirstOfQueued(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	base := []string{"--backend", "etcd", "--key-prefix", p}
	relA, relX := filepath.Join(dir, "release-a"), filepath.Join(dir, "release-x")
	holdA := holdUntil(t, base, "/srv/qa", relA)
	holdUntil(t, base, "/srv/qx", relX)
	waitFor(t, 10*time.Second, "both sets held", func() bool { return len(keys(t, p)) == 2 })
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/qa\n/srv/qd\n\n/srv/qx\n"), 0o644)
	out := filepath.Join(dir, "out")
	waiter := command(nil, "withlock", append(append([]string{}, base...), "--first-of", "--candidates-from", cands, "--wait", "60s",
		"--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE" > "$1"`, "sh", out)...)
	stderr := startWaiter(t, waiter)
	waitFor(t, 20*time.Second, "the first-of waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	r := run(t, nil, "withlock", append(append([]string{"-v"}, base...), "--paths", "/srv/qd", "--", "true")...)
	if r.code != 75 || !strings.Contains(r.stderr, "an earlier waiter") {
		t.Errorf("a newcomer on /srv/qd, in the waiter's first set: exit %d, stderr %q; want 75, yielding to an earlier waiter", r.code, r.stderr)
	}
	if r := run(t, nil, "withlock", append(append([]string{}, base...), "--paths", "/srv/qy", "--", "true")...); r.code != 0 {
		t.Errorf("a newcomer on /srv/qy, disjoint: exit %d, stderr %q; want 0", r.code, r.stderr)
	}

	releaseTo(t, relA, holdA, waiter, stderr, out, "0 (its first set, released)")
	if n := queueKeys(t, p); n != 0 {
		t.Errorf("%d queue key(s) left after the waiter ran; want none", n)
	}

	// A first-of waiter killed with SIGKILL while queued: its key goes
	// with its lease (TTL 2 s, no lock delay here), then nobody yields.
	holdUntil(t, base, "/srv/qa", relA+"2")
	waitFor(t, 10*time.Second, "/srv/qa held again", func() bool { return keys(t, p)[pathKey(p, "srv/qa")] != 0 })
	dead := command(nil, "withlock", append(append([]string{}, base...), "--ttl", "2s", "--lock-delay", "0s", "--first-of", "--candidates-from", cands, "--wait", "60s", "--", "true")...)
	startWaiter(t, dead)
	waitFor(t, 20*time.Second, "the doomed waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	if r := run(t, nil, "withlock", append(append([]string{}, base...), "--paths", "/srv/qd", "--", "true")...); r.code != 75 {
		t.Errorf("a newcomer behind a live first-of waiter: exit %d, stderr %q; want 75", r.code, r.stderr)
	}
	// withlock execs withlock-etcd, which keeps the pid: the waiter itself.
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	waitFor(t, 30*time.Second, "the killed waiter's queue key to go with its lease", func() bool { return queueKeys(t, p) == 0 })
	if r := run(t, nil, "withlock", append(append([]string{}, base...), "--paths", "/srv/qd", "--", "true")...); r.code != 0 {
		t.Errorf("a newcomer after the killed waiter's lease ended: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	os.WriteFile(relA+"2", nil, 0o644)
	os.WriteFile(relX, nil, 0o644)
}

// A --first-of waiter held back by a full pool is queued for its first set
// all the same, as the local backend's ticket names both: a newcomer on a
// free path of that set yields to it (75, the waiter named, and withlock
// who says so), a disjoint set runs, and once the slot is freed the waiter
// takes its first set and leaves the queue. Before, it waited for the pool
// alone, and the newcomer ran.
func TestFirstOfQueuedBehindPool(t *testing.T) {
	p, dir, _, pool := poolCase(t, 1)
	base := []string{"--backend", "etcd", "--key-prefix", p}
	rel := filepath.Join(dir, "release")
	holder := holdUntil(t, pool, "/srv/pz", rel)
	waitFor(t, 10*time.Second, "the pool's one slot held", func() bool { return slotKeys(t, p) == 1 })
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/pa\n/srv/pd\n\n/srv/px\n"), 0o644)
	out := filepath.Join(dir, "out")
	waiter := command(nil, "withlock", append(append([]string{}, pool...), "--first-of", "--candidates-from", cands, "--wait", "60s",
		"--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE" > "$1"`, "sh", out)...)
	stderr := startWaiter(t, waiter)
	waitFor(t, 20*time.Second, "the waiter's two queue keys (its pool's, its first set's)", func() bool { return queueKeys(t, p) == 2 })

	r := run(t, nil, "withlock", append(append([]string{"-v"}, base...), "--paths", "/srv/pd", "--", "true")...)
	name := fmt.Sprintf("an earlier waiter (pid %d ", waiter.Process.Pid)
	if r.code != 75 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "is queued for some of these paths") {
		t.Errorf("a newcomer on /srv/pd, in the pool waiter's first set: exit %d, stderr %q; want 75, %q queued for the path", r.code, r.stderr, name)
	}
	if r := run(t, nil, "withlock", append(append([]string{"who"}, base...), "--paths", "/srv/pd")...); r.code != 75 || !strings.Contains(r.stdout, "queued: ") {
		t.Errorf("withlock who /srv/pd: exit %d; want 75, the waiter named\n%s%s", r.code, r.stdout, r.stderr)
	}
	proceeds(t, append(append([]string{}, base...), "--paths", "/srv/py"), "a newcomer on /srv/py, disjoint")

	releaseTo(t, rel, holder, waiter, stderr, out, "0 (its first set, once the slot is free)")
	if n := queueKeys(t, p); n != 0 {
		t.Errorf("%d queue key(s) left after the waiter ran; want none", n)
	}
}
