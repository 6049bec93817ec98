//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/pathlock"
)

// poolQueue is a lock dir with the default slot pool, whose slots the test
// holds itself (as a Python worker would, outside the queue), and withlock
// waiters and newcomers on it.
type poolQueue struct {
	t     *testing.T
	dir   string
	locks string
	env   []string
	held  map[int]*os.File
}

func newPoolQueue(t *testing.T) *poolQueue {
	dir, locks := lockDirIn(t)
	q := &poolQueue{t: t, dir: dir, locks: locks, env: append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks), held: map[int]*os.File{}}
	return q
}

// lockDirIn returns a fresh test dir (symlinks resolved) and a lock dir
// "locks" made in it.
func lockDirIn(t *testing.T) (dir, locks string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	locks = filepath.Join(dir, "locks")
	if err := os.Mkdir(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, locks
}

// hold takes slot i of the default pool, as a process outside the queue.
func (q *poolQueue) hold(i int) {
	q.held[i] = q.holdFile(fmt.Sprintf("withlock-slot-%d.lock", i))
}

// holdFile locks the file name in the lock dir (creating it) as a process
// outside the queue; closing the file releases it.
func (q *poolQueue) holdFile(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(q.locks, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		q.t.Fatal(err)
	}
	q.t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		q.t.Fatalf("holding %s: %v", name, err)
	}
	return f
}

// holdPath locks path p's lock file (the Python rule's name) as a
// process outside the queue; closing the file releases it.
func (q *poolQueue) holdPath(p string) *os.File {
	cs, err := pathlock.CanonicalSet([]string{p})
	if err != nil {
		q.t.Fatal(err)
	}
	return q.holdFile(pathlock.LockName(cs[0]))
}

func (q *poolQueue) release(i int) {
	q.held[i].Close()
	delete(q.held, i)
}

// waiter starts a --wait withlock with args that creates file ran when
// its command runs, and returns once it has a ticket that reserves a slot
// (a pool line flagged "+").
func (q *poolQueue) waiter(ran string, args ...string) *exec.Cmd {
	before := q.tickets()
	cmd := exec.Command(filepath.Join(binDir, "withlock"), append(append([]string{"--wait", "60s"}, args...), "--", "touch", ran)...)
	cmd.Env = q.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		q.t.Fatal(err)
	}
	q.t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT); cmd.Process.Kill(); cmd.Wait() })
	waitUntil(q.t, 20*time.Second, "the waiter's ticket", func() bool {
		for n := range q.tickets() {
			if !before[n] && strings.HasSuffix(n, "-"+strconv.Itoa(cmd.Process.Pid)) {
				data, _ := os.ReadFile(filepath.Join(q.locks, "withlock-queue", n))
				return bytes.Contains(data, []byte(" +\n"))
			}
		}
		return false
	})
	return cmd
}

func (q *poolQueue) tickets() map[string]bool {
	m := map[string]bool{}
	names, _ := filepath.Glob(filepath.Join(q.locks, "withlock-queue", "t-*"))
	for _, n := range names {
		m[filepath.Base(n)] = true
	}
	return m
}

// run runs a newcomer withlock (no --wait) with args, verbose, and returns
// its exit code and stderr.
func (q *poolQueue) run(args ...string) (int, string) {
	return q.withlock(append([]string{"-v"}, args...)...)
}

// withlock runs withlock with args in the test's lock dir and returns its
// exit code and output.
func (q *poolQueue) withlock(args ...string) (int, string) {
	cmd := exec.Command(filepath.Join(binDir, "withlock"), args...)
	cmd.Env = q.env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		q.t.Fatal(err)
	}
	return 0, string(out)
}

func (q *poolQueue) wantSkip(why string, pid int, args ...string) {
	q.t.Helper()
	code, out := q.run(append(args, "--", "true")...)
	if code != 75 || !strings.Contains(out, "queued for a slot of pool") || !strings.Contains(out, "pid "+strconv.Itoa(pid)) {
		q.t.Fatalf("%s: withlock %s exited %d, want 75 naming the queued waiter (pid %d); output:\n%s", why, strings.Join(args, " "), code, pid, out)
	}
	// withlock who with the same paths and pools says so too (who takes
	// no --first-of).
	if slices.Contains(args, "--first-of") {
		return
	}
	code, out = q.who(args...)
	if code != 75 || !strings.Contains(out, "\nqueued: an earlier waiter, pid "+strconv.Itoa(pid)+" ") || !strings.Contains(out, "reserves the free slots of pool") {
		q.t.Fatalf("%s: withlock who %s exited %d, want 75 naming the queued waiter (pid %d) and its pool; output:\n%s", why, strings.Join(args, " "), code, pid, out)
	}
}

func (q *poolQueue) wantRun(why string, args ...string) {
	q.t.Helper()
	if code, out := q.run(append(args, "--", "true")...); code != 0 {
		q.t.Fatalf("%s: withlock %s exited %d, want 0; output:\n%s", why, strings.Join(args, " "), code, out)
	}
	if code, out := q.who(args...); code != 0 || strings.Contains(out, "queued:") {
		q.t.Fatalf("%s: withlock who %s exited %d, want 0 and no waiter; output:\n%s", why, strings.Join(args, " "), code, out)
	}
}

// who runs withlock who with args (a newcomer's paths and pools) and
// returns its exit code and output.
func (q *poolQueue) who(args ...string) (int, string) {
	return q.withlock(append([]string{"who"}, args...)...)
}

// freeze stops the waiter with SIGSTOP and returns once it is stopped
// (the signal is delivered asynchronously; a waiter woken meanwhile could
// otherwise still take a slot).
func freeze(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	waitUntil(t, 20*time.Second, "the waiter to stop", func() bool {
		data, err := os.ReadFile(stat)
		if err != nil {
			return false
		}
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		return len(f) > 0 && f[0] == "T"
	})
}

func wantRan(t *testing.T, cmd *exec.Cmd, ran string) {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the waiter: %v; stderr:\n%s", err, cmd.Stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the waiter exited 0 but its command did not run: %v", err)
	}
}

// A --wait waiter for a full pool reserves the next free slot: a newcomer
// (plain or --first-of, with or without paths) that arrives when a slot
// frees yields to it instead of taking the slot, however often newcomers
// come. Frozen with SIGSTOP, the waiter keeps its ticket and cannot take
// the slot itself, which makes the newcomer's arrival deterministic.
// Before slot pools were queued, the newcomer took the slot (exit 0).
func TestPoolWaiterReservesSlot(t *testing.T) {
	q := newPoolQueue(t)
	q.hold(0)
	ran := filepath.Join(q.dir, "ran")
	w := q.waiter(ran, "--slots", "1")
	freeze(t, w)
	q.release(0)
	pid := w.Process.Pid
	q.wantSkip("slot free, waiter queued", pid, "--slots", "1")
	q.wantSkip("a newcomer with a path", pid, "--slots", "1", "--paths", filepath.Join(q.dir, "p"))
	cands := filepath.Join(q.dir, "cands")
	os.WriteFile(cands, []byte(filepath.Join(q.dir, "c1")+"\n\n"+filepath.Join(q.dir, "c2")+"\n"), 0o644)
	q.wantSkip("a --first-of newcomer", pid, "--slots", "1", "--first-of", "--candidates-from", cands)
	q.wantRun("a newcomer without slots", "--paths", filepath.Join(q.dir, "p"))
	w.Process.Signal(syscall.SIGCONT)
	wantRan(t, w, ran)
	q.wantRun("the waiter gone", "--slots", "1")
}

// A waiter reserves one slot, not the pool: with two slots free and one
// waiter queued, a newcomer takes one; with one free, it yields. Paths
// and pool together: the ticket reserves both.
func TestPoolWaiterReservesOneSlot(t *testing.T) {
	q := newPoolQueue(t)
	q.hold(0)
	q.hold(1)
	ran := filepath.Join(q.dir, "ran")
	w := q.waiter(ran, "--slots", "2", "--paths", filepath.Join(q.dir, "a"))
	freeze(t, w)
	pid := w.Process.Pid
	q.release(0)
	q.wantSkip("one slot free, reserved by the waiter", pid, "--slots", "2")
	q.release(1)
	// Two free, one reserved: a newcomer gets one and, while it runs,
	// the next yields again.
	hold := filepath.Join(q.dir, "hold")
	started := hold + ".started"
	nc := exec.Command(filepath.Join(binDir, "withlock"), "--slots", "2", "--", "sh", "-c",
		`: > "$1.started"; while [ ! -e "$1" ] && [ -d "${1%/*}" ]; do sleep 0.02; done`, "sh", hold)
	nc.Env = q.env
	var ncErr bytes.Buffer
	nc.Stderr = &ncErr
	nc.Args = append(nc.Args[:1], append([]string{"-v"}, nc.Args[1:]...)...)
	if err := nc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(hold, nil, 0o644); nc.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- nc.Wait() }()
	waitUntil(t, 20*time.Second, "a newcomer to take one of two free slots", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the newcomer for two free slots, one reserved, exited (%v), want it to run; stderr:\n%s", err, ncErr.String())
		default:
		}
		_, err := os.Stat(started)
		return err == nil
	})
	q.wantSkip("the last free slot reserved", pid, "--slots", "2")
	os.WriteFile(hold, nil, 0o644)
	if err := <-exited; err != nil {
		t.Fatalf("the newcomer that ran: %v", err)
	}
	w.Process.Signal(syscall.SIGCONT)
	wantRan(t, w, ran)
}

// A waiter killed with SIGKILL while queued for a pool reserves nothing:
// its ticket is dead (no flock on it) and ignored, then removed.
func TestPoolWaiterKilledReservesNothing(t *testing.T) {
	q := newPoolQueue(t)
	q.hold(0)
	w := q.waiter(filepath.Join(q.dir, "ran"), "--slots", "1")
	freeze(t, w)
	q.release(0)
	q.wantSkip("waiter queued", w.Process.Pid, "--slots", "1")
	w.Process.Kill()
	w.Wait()
	q.wantRun("waiter killed", "--slots", "1")
	if n := len(q.tickets()); n != 0 {
		t.Fatalf("%d tickets left after the killed waiter's was read", n)
	}
}

// A waiter reserves a slot only while a pool is what it waits for: once
// its pool has a free slot and it waits for a path held by another (a
// Python worker: here this test), it flips its ticket's flag to "-" and
// newcomers take the slot meanwhile; it gets in when the path frees.
func TestPoolWaiterReservesOnlyWhatItWaitsFor(t *testing.T) {
	q := newPoolQueue(t)
	q.hold(0)
	a := filepath.Join(q.dir, "a")
	la := q.holdPath(a)
	ran := filepath.Join(q.dir, "ran")
	w := q.waiter(ran, "--slots", "1", "--paths", a)
	q.wantSkip("the pool full, the waiter reserves it", w.Process.Pid, "--slots", "1")
	q.release(0) // the waiter now takes the slot, meets a busy, lets the slot go
	waitUntil(t, 20*time.Second, "the waiter to stop reserving", func() bool {
		for n := range q.tickets() {
			if strings.HasSuffix(n, "-"+strconv.Itoa(w.Process.Pid)) {
				data, _ := os.ReadFile(filepath.Join(q.locks, "withlock-queue", n))
				return bytes.Contains(data, []byte(" -\n")) && !bytes.Contains(data, []byte(" +\n"))
			}
		}
		return false
	})
	q.wantRun("the waiter waits for a path, not for the slot", "--slots", "1")
	la.Close()
	wantRan(t, w, ran)
}

// Pool waiters are served in arrival order even when the earlier one
// reserved nothing when the later one arrived (it waited for a path then)
// and reserves the pool only afterwards: the later waiter keeps reading
// the queue instead of taking the first slot that frees. Frozen, the
// earlier waiter cannot run; the later one must not take the slot meanwhile.
func TestPoolWaitersInArrivalOrder(t *testing.T) {
	q := newPoolQueue(t)
	a := filepath.Join(q.dir, "a")
	la := q.holdPath(a)
	order := filepath.Join(q.dir, "order")
	start := func(tag string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "withlock"), append(append([]string{"--wait", "60s"}, args...), "--", "sh", "-c", `echo `+tag+` >> "$1"`, "sh", order)...)
		cmd.Env = q.env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGCONT); cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	ticket := func(cmd *exec.Cmd) []byte {
		for n := range q.tickets() {
			if strings.HasSuffix(n, "-"+strconv.Itoa(cmd.Process.Pid)) {
				data, _ := os.ReadFile(filepath.Join(q.locks, "withlock-queue", n))
				return data
			}
		}
		return nil
	}
	// The first waiter waits for a (held), its pool free: it reserves nothing.
	w1 := start("1", "--paths", a, "--slots", "1")
	waitUntil(t, 20*time.Second, "the first waiter's ticket, reserving nothing", func() bool {
		return bytes.Contains(ticket(w1), []byte(" -\n"))
	})
	q.hold(0)
	w2 := start("2", "--slots", "1")
	waitUntil(t, 20*time.Second, "the second waiter to reserve the pool", func() bool {
		return bytes.Contains(ticket(w2), []byte(" +\n"))
	})
	// a frees: the first waiter gets it, finds the pool full, lets a go
	// and now reserves the pool.
	la.Close()
	waitUntil(t, 20*time.Second, "the first waiter to reserve the pool", func() bool {
		return bytes.Contains(ticket(w1), []byte(" +\n"))
	})
	freeze(t, w1)
	q.release(0)
	q.wantSkip("a newcomer behind both", w1.Process.Pid, "--slots", "1")
	w1.Process.Signal(syscall.SIGCONT)
	for _, w := range []*exec.Cmd{w1, w2} {
		if err := w.Wait(); err != nil {
			t.Fatalf("a waiter: %v; stderr:\n%s", err, w.Stderr)
		}
	}
	if got, _ := os.ReadFile(order); string(got) != "1\n2\n" {
		t.Fatalf("the waiters ran in the order %q; want 1 then 2", got)
	}
}

// A waiter for two slots of one pool (the same --slot-file twice) with
// one slot free sleeps: the slot it takes and gives back in each attempt
// does not wake it (before, every give-back woke it at once: thousands of
// attempts a second, a core, and the free slot taken and dropped over and
// over under other processes' tries). Its CPU time over a second, from
// /proc: a spinning waiter shows about 100 ticks (a whole core), one that
// sleeps a few at most (an attempt per 250 ms poll). Then the other slot
// frees and the waiter runs.
func TestPoolTwiceWaiterSleeps(t *testing.T) {
	q := newPoolQueue(t)
	q.hold(1)
	ran := filepath.Join(q.dir, "ran")
	tmpl := filepath.Join(q.locks, "withlock-slot-{i}.lock")
	w := q.waiter(ran, "--slots", "2", "--slot-file", tmpl, "--slots", "2", "--slot-file", tmpl)
	before := cpuTicks(t, w.Process.Pid)
	time.Sleep(time.Second) // a window for a spinning waiter to show, not a wait for anything
	if n := cpuTicks(t, w.Process.Pid) - before; n > 20 {
		t.Errorf("the waiter used %d ticks of CPU in 1 s while it waited; want at most 20 (it must sleep)", n)
	}
	// It needs two slots: it reserves two (found by an attack session:
	// it reserved one, and a later waiter for one slot overtook it).
	// Frozen, with both free, a newcomer yields.
	freeze(t, w)
	q.release(1)
	q.wantSkip("both slots free, both reserved", w.Process.Pid, "--slots", "2", "--slot-file", tmpl)
	w.Process.Signal(syscall.SIGCONT)
	wantRan(t, w, ran)
}

// cpuTicks returns the user and system time process pid has used, in
// clock ticks (/proc/PID/stat).
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// A waiter for two pools keeps the slot of the first reserved while it
// waits for the second: without that, each pool that comes free while the
// other is full goes to a newcomer, and two pools that come free in turn
// starve the waiter (found by an attack session). Pools P and Q of one
// slot, both held; the waiter reserves P, then P frees and Q is still
// held: it reserves both. Frozen, it cannot take P; a newcomer on P must
// yield all the same.
func TestPoolWaiterReservesEveryFullPool(t *testing.T) {
	q := newPoolQueue(t)
	p, pq := filepath.Join(q.locks, "p-{i}.lock"), filepath.Join(q.locks, "q-{i}.lock")
	hp, hq := q.holdFile("p-0.lock"), q.holdFile("q-0.lock")
	ran := filepath.Join(q.dir, "ran")
	w := q.waiter(ran, "--slots", "1", "--slot-file", p, "--slots", "1", "--slot-file", pq)
	hp.Close() // P frees: the waiter takes it, finds Q full, gives P back
	waitUntil(t, 20*time.Second, "the waiter to reserve both pools", func() bool {
		for n := range q.tickets() {
			if strings.HasSuffix(n, "-"+strconv.Itoa(w.Process.Pid)) {
				data, _ := os.ReadFile(filepath.Join(q.locks, "withlock-queue", n))
				return bytes.Count(data, []byte(" +\n")) == 2
			}
		}
		return false
	})
	freeze(t, w)
	q.wantSkip("P free, reserved by the waiter for P and Q", w.Process.Pid, "--slots", "1", "--slot-file", p)
	w.Process.Signal(syscall.SIGCONT)
	hq.Close()
	wantRan(t, w, ran)
}

// A lock dir that several users share (root's, mode 1777, as under /tmp):
// the first waiter, another user, creates the queue dir, and it is
// shared: the queue dir gets mode 1777, root's withlock reads it (a plain
// run on a free path runs, a newcomer on the pool yields to the other
// user's waiter) and queues in it too. Before, root refused the queue dir
// as owned by another user and every run in the lock dir exited 125
// (found by an attack session).
func TestSharedLockDirQueue(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a withlock as another user (setpriv)")
	}
	shared, err := os.MkdirTemp("", "withlock-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	shared, _ = filepath.EvalSymlinks(shared)
	locks, out := filepath.Join(shared, "locks"), filepath.Join(shared, "out")
	for _, d := range []string{locks, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for d, m := range map[string]os.FileMode{shared: 0o755, locks: 0o1777 | os.ModeSticky, out: 0o777} {
		if err := os.Chmod(d, m); err != nil {
			t.Fatal(err)
		}
	}
	q := &poolQueue{t: t, dir: shared, locks: locks, env: append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks), held: map[int]*os.File{}}
	q.hold(0)
	if err := os.Chmod(filepath.Join(locks, "withlock-slot-0.lock"), 0o666); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(out, "ran")
	w := exec.Command(unprivWrapper, filepath.Join(binDir, "withlock"), "--wait", "60s", "--slots", "1", "--", "touch", ran)
	w.Env = q.env
	var stderr bytes.Buffer
	w.Stderr = &stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	waitUntil(t, 20*time.Second, "the other user's ticket", func() bool { return len(q.tickets()) == 1 })
	st, err := os.Stat(filepath.Join(locks, "withlock-queue"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&(os.ModeSticky|0o777) != os.ModeSticky|0o777 {
		t.Errorf("the queue dir the other user created has mode %v; want it shared like its lock dir (drwxrwxrwt)", st.Mode())
	}
	q.wantRun("root, a free path in the shared lock dir", "--paths", filepath.Join(shared, "p"))
	q.wantSkip("root, a newcomer on the pool the other user waits for", w.Process.Pid, "--slots", "1")
	// Root queues behind it, in the same queue.
	ran2 := filepath.Join(out, "ran2")
	w2 := q.waiter(ran2, "--slots", "1")
	q.release(0)
	if err := w.Wait(); err != nil {
		t.Fatalf("the other user's waiter: %v; stderr:\n%s", err, stderr.String())
	}
	wantRan(t, w2, ran2)
}
