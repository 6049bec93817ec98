//go:build etcd

package etcd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etcdCase sets up a test on the cluster: its key prefix, a temp dir,
// withlock's etcd arguments, and args, which appends more to a copy of them.
func etcdCase(t *testing.T) (p, dir string, base []string, args func(more ...string) []string) {
	t.Helper()
	need(t)
	p, dir = prefix(t), t.TempDir()
	base = []string{"--backend", "etcd", "--key-prefix", p}
	return p, dir, base, func(more ...string) []string { return append(append([]string{}, base...), more...) }
}

// queueKeys counts the waiting queue's keys under prefix p.
func queueKeys(t *testing.T, p string) int { return keysUnder(t, p, "/queue/") }

// keysUnder counts the keys under prefix p+sub.
func keysUnder(t *testing.T, p, sub string) int {
	n := 0
	for k := range keys(t, p) {
		if strings.HasPrefix(k, p+sub) {
			n++
		}
	}
	return n
}

// Fair waiting on etcd (tests/testdata/withlock/fairwait.txtar is the
// local backend's): a --wait waiter whose set is busy is queued; a later
// set that intersects its set yields to it (skip, or queue behind it),
// though the paths it wants are free; a disjoint set runs at once; the
// waiters run in their order once the holder leaves; a waiter killed with
// SIGKILL while queued stops blocking others when its lease ends.
func TestFairWait(t *testing.T) {
	p, dir, _, args := etcdCase(t)
	release := filepath.Join(dir, "release")
	start := func(name string, a ...string) *exec.Cmd {
		cmd := command(nil, "withlock", a...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	holder := start("holder", args("--paths", "/srv/a", "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)...)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/a")] != 0 })

	order := filepath.Join(dir, "order")
	w1 := start("w1", args("--wait", "60s", "--paths", "/srv/a,/srv/b", "--", "sh", "-c", `echo w1 >> "$1"`, "sh", order)...)
	waitFor(t, 20*time.Second, "the first waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	// /srv/b is free, but the first waiter waits for it: a newcomer
	// yields and says to whom.
	r := run(t, nil, "withlock", args("-v", "--paths", "/srv/b", "--", "touch", filepath.Join(dir, "ran-b"))...)
	if r.code != 75 || !strings.Contains(r.stderr, "an earlier waiter (pid ") || !strings.Contains(r.stderr, "is queued for some of these paths") {
		t.Errorf("a newcomer on a queued path: exit %d, stderr %q; want 75, an earlier waiter named", r.code, r.stderr)
	}
	// --first-of passes over a candidate that intersects the waiter's set.
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/b\n\n/srv/d\n"), 0o644)
	r = run(t, nil, "withlock", args("--first-of", "--candidates-from", cands, "--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE"`)...)
	if r.code != 0 || r.stdout != "1\n" {
		t.Errorf("--first-of with set 0 queued for: exit %d, stdout %q, stderr %q; want set 1", r.code, r.stdout, r.stderr)
	}
	// A disjoint set runs at once.
	r = run(t, nil, "withlock", args("--paths", "/srv/c", "--", "true")...)
	if r.code != 0 {
		t.Errorf("a disjoint set: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	// A second waiter on /srv/b (free) queues behind the first.
	w2 := start("w2", args("--wait", "60s", "--paths", "/srv/b", "--", "sh", "-c", `echo w2 >> "$1"`, "sh", order)...)
	waitFor(t, 20*time.Second, "the second waiter's queue key", func() bool { return queueKeys(t, p) == 2 })
	if b, _ := os.ReadFile(order); len(b) != 0 {
		t.Errorf("a waiter ran while the holder held /srv/a: %q", b)
	}
	os.WriteFile(release, nil, 0o644)
	for _, c := range []*exec.Cmd{holder, w1, w2} {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %v", c.Args, err)
		}
	}
	if b, _ := os.ReadFile(order); string(b) != "w1\nw2\n" {
		t.Errorf("the waiters ran in the order %q; want w1 then w2", b)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every process exited: %v", k)
	}

	// A waiter killed with SIGKILL while queued: its key stays until its
	// lease ends (TTL 2 s, no lock delay here), then nobody yields to it.
	os.Remove(release)
	start("holder2", args("--paths", "/srv/a", "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)...)
	waitFor(t, 10*time.Second, "the second holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/a")] != 0 })
	dead := start("dead", args("--ttl", "2s", "--lock-delay", "0s", "--wait", "60s", "--paths", "/srv/a,/srv/b", "--", "true")...)
	waitFor(t, 20*time.Second, "the doomed waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	if r := run(t, nil, "withlock", args("--paths", "/srv/b", "--", "true")...); r.code != 75 {
		t.Errorf("a newcomer behind a live waiter: exit %d, stderr %q; want 75", r.code, r.stderr)
	}
	// withlock execs withlock-etcd, which keeps the pid: the waiter itself.
	dead.Process.Signal(syscall.SIGKILL)
	dead.Wait()
	waitFor(t, 30*time.Second, "the killed waiter's queue key to go with its lease", func() bool { return queueKeys(t, p) == 0 })
	if r := run(t, nil, "withlock", args("--paths", "/srv/b", "--", "true")...); r.code != 0 {
		t.Errorf("a newcomer after the killed waiter's lease ended: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	os.WriteFile(release, nil, 0o644)
}

// A waiter stopped (SIGSTOP) past its lease's end loses its queue key with
// the lease, as documented; once it runs again it queues anew, at the back,
// so that from then on later sets that intersect its own yield to it again.
// Before, it went on waiting unqueued for the rest of its wait, and every
// newcomer on its free paths overtook it.
func TestFrozenWaiterQueuesAgain(t *testing.T) {
	p, dir, base, args := etcdCase(t)
	rel := filepath.Join(dir, "release")
	holder := holdUntil(t, base, "/srv/fs", rel)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/fs")] != 0 })
	out := filepath.Join(dir, "out")
	waiter := command(nil, "withlock", args("--ttl", "2s", "--lock-delay", "0s", "--wait", "60s", "--paths", "/srv/fs,/srv/ft",
		"--", "sh", "-c", `echo ran > "$1"`, "sh", out)...)
	stderr := startWaiter(t, waiter)
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	thaw := freeze(t, waiter)
	waitFor(t, 30*time.Second, "the frozen waiter's queue key to go with its lease", func() bool { return queueKeys(t, p) == 0 })
	if r := run(t, nil, "withlock", args("--paths", "/srv/ft", "--", "true")...); r.code != 0 {
		t.Errorf("a newcomer on /srv/ft while the waiter is frozen and unqueued: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	thaw()
	waitFor(t, 30*time.Second, "the thawed waiter's new queue key", func() bool { return queueKeys(t, p) == 1 })
	if r := run(t, nil, "withlock", args("--paths", "/srv/ft", "--", "true")...); r.code != 75 {
		t.Errorf("a newcomer on /srv/ft behind the thawed waiter: exit %d, stderr %q; want 75", r.code, r.stderr)
	}
	os.WriteFile(rel, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v (stderr %q)", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "ran\n" {
		t.Errorf("the waiter's command wrote %q; want ran", b)
	}
	if n := queueKeys(t, p); n != 0 {
		t.Errorf("%d queue key(s) left after the waiter ran; want none", n)
	}
}

// A waiter stopped past its lease's end, whose path or slot is freed while
// it is stopped, runs its command once continued: its lock transaction
// finds the lease gone and is tried again under a new one. Before, it
// exited 125 ("requested lease not found", about four times in five: when
// the watch's wake-up came before the renewal that finds the lease gone)
// with its wait far from over.
func TestFrozenWaiterRunsWhenFreed(t *testing.T) {
	for _, c := range []struct{ name, held string }{{"path", "path"}, {"slot", "slot"}} {
		t.Run(c.name, func(t *testing.T) {
			p, dir, tmpl, pool := poolCase(t, 1)
			base := []string{"--backend", "etcd", "--key-prefix", p}
			rel := filepath.Join(dir, "release")
			var holder *exec.Cmd
			want := []string{"--paths", "/srv/fz"}
			if c.held == "path" {
				holder = holdUntil(t, base, "/srv/fz", rel)
				waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/fz")] != 0 })
			} else {
				holder = holdUntil(t, pool, "/srv/other", rel)
				waitFor(t, 10*time.Second, "the pool's one slot held", func() bool { return slotKeys(t, p) == 1 })
				want = append(want, "--slots", "1", "--slot-file", tmpl)
			}
			out := filepath.Join(dir, "out")
			waiter := command(nil, "withlock", append(append(append([]string{}, base...), "--ttl", "2s", "--lock-delay", "0s", "--wait", "60s"), append(want,
				"--", "sh", "-c", `echo ran > "$1"`, "sh", out)...)...)
			stderr := startWaiter(t, waiter)
			waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) >= 1 })

			thaw := freeze(t, waiter)
			os.WriteFile(rel, nil, 0o644)
			if err := holder.Wait(); err != nil {
				t.Fatalf("holder: %v", err)
			}
			waitFor(t, 30*time.Second, "the frozen waiter's lease to end (its queue key gone)", func() bool { return queueKeys(t, p) == 0 })
			thaw()
			if err := waiter.Wait(); err != nil {
				t.Fatalf("the thawed waiter: %v (stderr %q); want exit 0, its command run", err, stderr.String())
			}
			if b, _ := os.ReadFile(out); string(b) != "ran\n" {
				t.Errorf("the waiter's command wrote %q; want ran", b)
			}
		})
	}
}

// A waiter that takes its set keeps its queue key until it releases: its
// lease takes both, in one revision, so the waiters behind it are woken
// once, by the release (docs/withlock.md, "Fair waiting"). Newcomers and
// `withlock who` name it as the path's holder, not as an earlier waiter.
func TestHolderKeepsQueueKey(t *testing.T) {
	p, dir, base, args := etcdCase(t)
	release1, release2, running := filepath.Join(dir, "release1"), filepath.Join(dir, "release2"), filepath.Join(dir, "running")
	holdUntil(t, base, "/srv/a", release1)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/a")] != 0 })
	w := command(nil, "withlock", args("--wait", "60s", "--paths", "/srv/a", "--", "sh", "-c",
		`touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`, "sh", running, release2)...)
	stderr := startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	os.WriteFile(release1, nil, 0o644)
	waitFor(t, 20*time.Second, "the waiter's command", func() bool { _, err := os.Stat(running); return err == nil })

	if n := queueKeys(t, p); n != 1 {
		t.Errorf("queue keys while the former waiter holds /srv/a: %d; want its own, 1", n)
	}
	pid := "pid " + strconv.Itoa(w.Process.Pid) // withlock execs withlock-etcd: the same pid
	r := run(t, nil, "withlock", args("-v", "--paths", "/srv/a", "--", "true")...)
	if r.code != 75 || strings.Contains(r.stderr, "earlier waiter") || !strings.Contains(r.stderr, pid) {
		t.Errorf("a newcomer while the former waiter holds: exit %d, stderr %q; want 75 naming the holder, %s, not an earlier waiter", r.code, r.stderr, pid)
	}
	r = run(t, nil, "withlock", append(append([]string{"who"}, base...), "/srv/a")...)
	if r.code != 75 || strings.Contains(r.stdout, "queued") || !strings.Contains(r.stdout, pid) {
		t.Errorf("who /srv/a: exit %d; want 75 naming the holder, %s, and no waiter\n%s%s", r.code, pid, r.stdout, r.stderr)
	}
	os.WriteFile(release2, nil, 0o644)
	if err := w.Wait(); err != nil {
		t.Fatalf("the waiter: %v\n%s", err, stderr)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after the release: %v", k)
	}
}

// Five waiters queued one after another behind a holder run in the order
// they queued, each once the one before it has released: every waiter
// behind another keeps a ledger (ledger.go) whose entries are the earlier
// waiters' queue keys, which they keep while they hold.
func TestLedgerChainOrder(t *testing.T) {
	p, dir, base, args := etcdCase(t)
	release, order := filepath.Join(dir, "release"), filepath.Join(dir, "order")
	holdUntil(t, base, "/srv/a", release)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/a")] != 0 })
	var ws []*exec.Cmd
	for i := range 5 {
		// Each appends its name, then checks that nobody else ran
		// meanwhile (the file still ends with its own line).
		name := "w" + strconv.Itoa(i+1)
		w := command(nil, "withlock", args("--wait", "60s", "--paths", "/srv/a", "--", "sh", "-c",
			`echo "$2" >> "$1" && sleep 0.05 && [ "$(tail -n 1 "$1")" = "$2" ]`, "sh", order, name)...)
		startWaiter(t, w)
		ws = append(ws, w)
		waitFor(t, 20*time.Second, name+"'s queue key", func() bool { return queueKeys(t, p) == i+1 })
	}
	os.WriteFile(release, nil, 0o644)
	for i, w := range ws {
		if err := w.Wait(); err != nil {
			t.Errorf("w%d: %v", i+1, err)
		}
	}
	if b, _ := os.ReadFile(order); string(b) != "w1\nw2\nw3\nw4\nw5\n" {
		t.Errorf("the waiters ran in the order %q; want w1 to w5", b)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every process exited: %v", k)
	}
}
