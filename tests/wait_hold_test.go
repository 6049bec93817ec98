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
	holder := start("--paths", b, "--", "sh", "-c", `: > "$1.started"; while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", relB)
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
