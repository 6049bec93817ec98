//go:build linux

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Two withlock --first-of --wait waiters whose candidate sets are all busy
// sleep: they do not open and close the lock files over and over (each
// close woke every first-of waiter watching the lock dir, itself included:
// before the fix, thousands of closes a second and a core each). Counted
// as write-closes in the lock dir by inotify over a second: a waiter that
// sleeps makes none (its busy files stay open; its fallback attempt every
// 250 ms reopens nothing). Then a release wakes one, which takes that set.
func TestFirstOfWaitersIdle(t *testing.T) {
	dir := t.TempDir()
	locks := filepath.Join(dir, "locks")
	env := append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks)
	start := func(args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "withlock"), args...)
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second // its command may outlive it, holding stderr
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() && stderr.Len() > 0 {
				t.Logf("%s: stderr %q", strings.Join(args, " "), stderr.String())
			}
		})
		return cmd
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	started := filepath.Join(dir, "started")
	release, releaseB := filepath.Join(dir, "release"), filepath.Join(dir, "release-b")
	// Each loop also ends once the test's dir is gone, so that a failed
	// run leaves no process behind.
	hold := `touch "$1"; while [ ! -e "$2" ] && [ -d "${2%/*}" ]; do sleep 0.02; done`
	start("--paths", a, "--", "sh", "-c", hold, "sh", filepath.Join(dir, "started-a"), release)
	start("--paths", b, "--", "sh", "-c", hold, "sh", started, releaseB)
	waitUntil(t, 10*time.Second, "the holders", func() bool {
		_, err := os.Stat(started)
		_, err2 := os.Stat(filepath.Join(dir, "started-a"))
		return err == nil && err2 == nil
	})
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte(a+"\n\n"+b+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	for range 2 {
		start("--first-of", "--candidates-from", cands, "--wait", "60s", "--", "sh", "-c", `echo "$WITHLOCK_CANDIDATE" >> "$1"`, "sh", out)
	}
	// Registered last, run first: the holders end before they are killed.
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644); os.WriteFile(releaseB, nil, 0o644) })
	queue := filepath.Join(locks, "withlock-queue")
	waitUntil(t, 20*time.Second, "two tickets", func() bool { ents, _ := os.ReadDir(queue); return len(ents) == 2 })

	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, locks, unix.IN_CLOSE_WRITE); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a window for a spinning waiter to show, not a wait for anything
	closes := 0
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			closes++
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	if closes > 8 {
		t.Errorf("%d write-closes in the lock dir in 1 s while two first-of waiters waited; want at most 8 (they must sleep)", closes)
	}

	os.WriteFile(releaseB, nil, 0o644)
	waitUntil(t, 20*time.Second, "a waiter to take set 1", func() bool { b, _ := os.ReadFile(out); return strings.HasPrefix(string(b), "1\n") })
}

// waitUntil polls cond every 5 ms until it holds, failing the test with
// what was awaited after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
