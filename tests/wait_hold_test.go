//go:build linux

package tests

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/pathlock"
)

// A --wait waiter holds nothing while it waits, even just after a wait in
// flock(2) got it one path of its set: if a holder that takes no part in
// the queue (a Python worker, flock(1); here this test) took another path
// of the set meanwhile, the path it got is released again before it waits
// for the other. Before, it kept that path locked until it got the whole
// set (found by attack: b held by the waiter while it waited for a).
func TestWaiterHoldsNothingWhileWaiting(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(dir, "locks")
	env := append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	lockOf := func(p string) string {
		cs, err := pathlock.CanonicalSet([]string{p})
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(locks, pathlock.LockName(cs[0]))
	}
	relB, ran := filepath.Join(dir, "release-b"), filepath.Join(dir, "ran")
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "withlock"), args...)
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	holder := start("--paths", b, "--", "sh", "-c", `: > "$1.started"; while [ ! -e "$1" ] && [ -d "${1%/*}" ]; do sleep 0.02; done`, "sh", relB)
	t.Cleanup(func() { os.WriteFile(relB, nil, 0o644) })
	waitUntil(t, 10*time.Second, "b's holder", func() bool { _, err := os.Stat(relB + ".started"); return err == nil })
	waiter := start("--wait", "60s", "--paths", a+","+b, "--", "touch", ran)
	waitUntil(t, 20*time.Second, "the waiter blocked in flock(2) on b", func() bool { return blockedInFlock(t, waiter.Process.Pid) })

	// This test takes a, outside the queue, then b's holder ends.
	fa, err := os.OpenFile(lockOf(a), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	if err := unix.Flock(int(fa.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("taking a: %v", err)
	}
	os.WriteFile(relB, nil, 0o644)
	holder.Wait()
	// The waiter gets b in flock(2), finds a busy, and must let b go.
	fb, err := os.OpenFile(lockOf(b), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	waitUntil(t, 20*time.Second, "b to be free while the waiter waits for a", func() bool {
		if unix.Flock(int(fb.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return false
		}
		unix.Flock(int(fb.Fd()), unix.LOCK_UN)
		return true
	})
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the waiter ran while a was held")
	}
	fa.Close() // a released: the waiter takes both and runs
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Error("the waiter did not run once a and b were free")
	}
}

// blockedInFlock reports whether /proc/locks shows pid blocked ("->") on a
// FLOCK.
func blockedInFlock(t *testing.T, pid int) bool {
	t.Helper()
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 5 && fs[1] == "->" && fs[2] == "FLOCK" && fs[5] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// A --first-of --wait waiter waits in flock(2) on a blocker of its first
// busy set, so that a release by LOCK_UN (which inotify does not report)
// wakes it as it wakes a plain waiter; and it holds nothing while it
// waits: when that wait gets it a path but another path of the set is
// busy, it lets the path go. Holders here are this test's own descriptors
// (a holder outside the queue, as a Python worker is).
func TestFirstOfWaiterWokenByUnlock(t *testing.T) {
	dir, locks := lockDirIn(t)
	// c sorts before a: a set's paths are taken in sorted order, so a,
	// got by the flock(2) wait, lies after c, where the attempt stops.
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "0c")
	hold := func(p string) *os.File {
		cs, err := pathlock.CanonicalSet([]string{p})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(locks, pathlock.LockName(cs[0])), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatalf("taking %s: %v", p, err)
		}
		return f
	}
	fa, fb := hold(a), hold(b)
	cands, out := filepath.Join(dir, "cands"), filepath.Join(dir, "out")
	os.WriteFile(cands, []byte(a+"\n"+c+"\n\n"+b+"\n"), 0o644)
	waiter := exec.Command(filepath.Join(binDir, "withlock"), "--first-of", "--candidates-from", cands, "--wait", "60s",
		"--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE" > "$1"`, "sh", out)
	waiter.Env = append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks)
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiter.Process.Kill(); waiter.Wait() })
	waitUntil(t, 20*time.Second, "the first-of waiter blocked in flock(2) on a", func() bool { return blockedInFlock(t, waiter.Process.Pid) })

	// c taken outside the queue, then a released by LOCK_UN: the waiter
	// gets a in flock(2), finds c busy, and must let a go.
	fc := hold(c)
	if err := unix.Flock(int(fa.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the waiter to take a, find c busy and wait on c", func() bool {
		return lockLine(t, waiter.Process.Pid, fc, true)
	})
	if lockLine(t, waiter.Process.Pid, fa, false) {
		t.Error("the waiter holds a while it waits for c")
	}
	if err := unix.Flock(int(fa.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("a is not free while the waiter waits: %v", err)
	}
	// b (set 1) released by LOCK_UN: the waiter takes set 1.
	if err := unix.Flock(int(fb.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "1\n" {
		t.Errorf("the waiter ran with candidate %q; want 1 (b)", got)
	}
	fc.Close()
}

// lockLine reports whether /proc/locks shows pid holding (blocked false)
// or waiting for (blocked true) a FLOCK on f's inode.
func lockLine(t *testing.T, pid int, f *os.File, blocked bool) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		fs := strings.Fields(line)
		if blocked {
			if len(fs) < 2 || fs[1] != "->" {
				continue
			}
			fs = fs[1:]
		}
		if len(fs) > 5 && fs[1] == "FLOCK" && fs[4] == strconv.Itoa(pid) && strings.HasSuffix(fs[5], ":"+strconv.FormatUint(st.Ino, 10)) {
			return true
		}
	}
	return false
}
