//go:build etcd

package etcd

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// alive reports whether the process whose PID is in file runs.
func alive(t *testing.T, file string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("pidfile: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// The whole cluster frozen (SIGSTOP) for longer than the TTL: the holder
// cannot renew its lease, stops the command (TERM, then KILL before the
// lease can expire on the cluster) and exits 70, even though the command
// would have exited 0 on TERM. After the cluster is back, the keys are gone.
func TestLeaseLossStopsCommand(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	pidf := filepath.Join(dir, "pid")
	// The command ignores nothing: TERM ends it (exit 0 from the trap).
	script := `trap 'exit 0' TERM; echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 0.05; done`
	h := command(nil, "withlock-etcd", "--key-prefix", p, "--ttl", "3s", "--paths", "/srv/lost.md", "--", "sh", "-c", script, "sh", pidf)
	var stderr bytes.Buffer
	h.Stderr = &stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the command", func() bool { _, err := os.Stat(pidf); return err == nil })

	frozen := time.Now()
	cl.Freeze(cl.All()...)
	done := make(chan error, 1)
	go func() { done <- h.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for alive(t, pidf) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(frozen)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cl.Thaw(cl.All()...)
		h.Process.Kill()
		t.Fatalf("withlock-etcd did not exit within 15 s of losing etcd; stderr %q", stderr.String())
	}
	exited := time.Since(frozen)
	code := exitCode(h, nil)
	// Keep the cluster frozen a little past the TTL so the lease expires.
	time.Sleep(max(0, 3500*time.Millisecond-exited))
	cl.Thaw(cl.All()...)
	t.Logf("command stopped %v and withlock-etcd exited %d %v after the cluster froze (TTL 3s); stderr %q",
		took.Round(time.Millisecond), code, exited.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	if code != 70 {
		t.Errorf("exit %d, want 70 (lease lost)", code)
	}
	if took > 3*time.Second {
		t.Errorf("the command was stopped %v after the freeze, after the 3 s lease could have expired", took)
	}
	if !strings.Contains(stderr.String(), "lost the etcd lease") {
		t.Errorf("stderr %q does not say the lease was lost", stderr.String())
	}
	if err := cl.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the lost lease's keys to go", func() bool { return len(keys(t, p)) == 0 })
}

// kill -9 of a follower, then of the leader, while a lock is held (and
// while other processes keep taking and releasing locks): the lock is kept
// — others stay busy across more than a TTL — the holder's command ends
// normally (not 70), and no acquisition in flight fails or overlaps.
func TestMemberKillKeepsLocks(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	// The default TTL (10 s): a leader election must not stop the command.
	// (With 5 s, a renewal missed during an election can come close to the
	// 3/4-TTL stop threshold; README recommends at least 10 s.)
	base := []string{"--key-prefix", p, "--paths", "/srv/held.md"}
	h := command(nil, "withlock-etcd", append(base, "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.05; done`, "sh", release)...)
	var stderr bytes.Buffer
	h.Stderr = &stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Process.Kill()
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return len(keys(t, p)) == 1 })
	busy := func(when string) {
		t.Helper()
		r := run(t, nil, "withlock-etcd", append(base, "--", "true")...)
		if r.code != 75 {
			t.Fatalf("%s: another process got exit %d, want 75 (busy): %s", when, r.code, r.stderr)
		}
	}

	// Background traffic: short critical sections on other paths.
	mark := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var fails []string
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := run(t, []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark, "ETCDTEST_HOLD=20ms"}, "withlock-etcd",
					"--key-prefix", p+"/bg", "--paths", "/srv/bg/a.md,/srv/bg/b.md", "--slots", "2", "--slot-file", "/bg-{i}", "--wait", "20s", "--", self, "bg:2")
				mu.Lock()
				codes[r.code]++
				if r.code != 0 {
					fails = append(fails, r.stderr)
				}
				mu.Unlock()
			}
		}()
	}

	leader, err := cl.Leader()
	if err != nil {
		t.Fatal(err)
	}
	follower := (leader + 1) % 3
	t.Logf("killing follower m%d", follower+1)
	if err := cl.Kill(follower); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	busy("after a follower was killed")
	if err := cl.Restart(follower); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if leader, err = cl.Leader(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killing leader m%d", leader+1)
	killed := time.Now()
	if err := cl.Kill(leader); err != nil {
		t.Fatal(err)
	}
	busy("right after the leader was killed")
	// More than a TTL on two members: the lease is renewed through the
	// new leader.
	for time.Since(killed) < 11*time.Second {
		time.Sleep(time.Second)
		busy("after the leader was killed")
	}
	if err := cl.Restart(leader); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	os.WriteFile(release, nil, 0o644)
	h.Wait()
	if code := exitCode(h, nil); code != 0 {
		t.Errorf("holder exit %d, want 0: %s", code, stderr.String())
	}
	n := checkMarks(t, mark)
	t.Logf("background: %d critical sections during the kills, exits %v", n, codes)
	if len(fails) > 0 {
		t.Errorf("acquisitions failed during member kills: %v", fails)
	}
	if n < 10 {
		t.Errorf("only %d background critical sections", n)
	}
}

// withlock-etcd killed with SIGKILL: the kernel kills its command at once
// (parent-death signal), and its keys stay until the lease expires — not
// before (nobody else could take them while a renewal may still be
// counted), and not much after.
func TestWrapperKilled(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	pidf := filepath.Join(dir, "pid")
	h := command(nil, "withlock-etcd", "--key-prefix", p, "--ttl", "3s", "--paths", "/srv/killed.md", "--", "sh", "-c", `echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60`, "sh", pidf)
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the command", func() bool { _, err := os.Stat(pidf); return err == nil })
	if len(keys(t, p)) != 1 {
		t.Fatal("no key")
	}
	// Let a renewal or two pass, then kill.
	time.Sleep(1500 * time.Millisecond)
	h.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	h.Wait()
	waitFor(t, 2*time.Second, "the command to die with withlock-etcd", func() bool { return !alive(t, pidf) })
	// The last renewal was at most TTL/3 = 1 s before the kill, so the
	// lease lives at least 2 s more.
	time.Sleep(time.Until(killed.Add(1500 * time.Millisecond)))
	if len(keys(t, p)) != 1 {
		t.Fatalf("the key went %v after the kill, before the lease could expire", time.Since(killed))
	}
	r := run(t, nil, "withlock-etcd", "--key-prefix", p, "--paths", "/srv/killed.md", "--", "true")
	if r.code != 75 {
		t.Fatalf("while the dead holder's lease lives: exit %d, want 75", r.code)
	}
	waitFor(t, 6*time.Second, "the key to expire", func() bool { return len(keys(t, p)) == 0 })
	gone := time.Since(killed)
	t.Logf("key gone %v after the holder was killed (TTL 3s)", gone.Round(10*time.Millisecond))
	if gone < 2*time.Second {
		t.Errorf("key gone after %v, before the TTL", gone)
	}
	r = run(t, nil, "withlock-etcd", "--key-prefix", p, "--paths", "/srv/killed.md", "--", "true")
	if r.code != 0 {
		t.Fatalf("after expiry: exit %d: %s", r.code, r.stderr)
	}
}

// The leader frozen (SIGSTOP, like a partitioned host) while processes
// take and release locks: requests to it time out — a lock transaction may
// then have been applied or not, and is read back — the others elect a new
// leader, and every acquisition still ends well, without overlap and
// without leaving a key behind.
func TestFrozenLeaderDuringAcquisitions(t *testing.T) {
	need(t)
	p := prefix(t)
	mark := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var fails []string
	rereads := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := run(t, []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark, "ETCDTEST_HOLD=10ms"}, "withlock-etcd", "-v",
					"--key-prefix", p, "--paths", "/srv/f/a.md,/srv/f/b.md", "--slots", "2", "--slot-file", "/f-{i}", "--wait", "30s", "--", self, "f:2")
				mu.Lock()
				codes[r.code]++
				if r.code != 0 {
					fails = append(fails, r.stderr)
				}
				if strings.Contains(r.stderr, "read back") {
					rereads++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	leader, err := cl.Leader()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("freezing leader m%d for 4 s", leader+1)
	cl.Freeze(leader)
	time.Sleep(4 * time.Second)
	cl.Thaw(leader)
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	n := checkMarks(t, mark)
	t.Logf("%d critical sections, exits %v, %d run(s) read back a timed-out transaction", n, codes, rereads)
	if len(fails) > 0 {
		t.Errorf("acquisitions failed while the leader was frozen: %v", fails)
	}
	waitFor(t, 15*time.Second, "no key left", func() bool { return len(keys(t, p)) == 0 })
}
