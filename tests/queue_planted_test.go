//go:build linux

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
)

// A withlock-queue that is not a directory this user can use — a regular
// file, a FIFO, a symlink planted in a shared (1777) lock dir by another
// user, or another user's directory this one may not write — is never a
// failure (issue 32, item 3): every form behaves as with no queue (a free
// path runs, a busy one skips with 75, --wait waits and runs once the
// holder ends, --first-of, --slots and who as without a queue), and -v
// says that waiting is unqueued. Before, each of them exited 125.
func TestPlantedQueue(t *testing.T) {
	root := os.Geteuid() == 0
	// plant runs argv as the other user (root: $UNPRIV, uid 65534), else
	// as this one: a file this user planted is no queue either.
	plant := func(t *testing.T, argv ...string) {
		t.Helper()
		if root {
			argv = append([]string{unprivWrapper}, argv...)
		}
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("planting %v: %v\n%s", argv, err, out)
		}
	}
	type kind struct {
		plant func(t *testing.T, q string)
		// asOther: withlock runs as the other user ($UNPRIV), the queue
		// dir being this one's (root's, which the other may not write).
		asOther bool
	}
	kinds := map[string]kind{
		"file":    {plant: func(t *testing.T, q string) { plant(t, "touch", q) }},
		"fifo":    {plant: func(t *testing.T, q string) { plant(t, "mkfifo", q) }},
		"symlink": {plant: func(t *testing.T, q string) { plant(t, "ln", "-s", "/", q) }},
	}
	if root {
		kinds["other user's dir"] = kind{asOther: true, plant: func(t *testing.T, q string) {
			if err := os.Mkdir(q, 0o755); err != nil {
				t.Fatal(err)
			}
		}}
	}
	for name, k := range kinds {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			shared, err := os.MkdirTemp("", "withlock-planted-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(shared) })
			shared, _ = filepath.EvalSymlinks(shared)
			locks := filepath.Join(shared, "locks")
			if err := os.Mkdir(locks, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(shared, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(locks, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			queue := filepath.Join(locks, "withlock-queue")
			k.plant(t, queue)
			a, b := filepath.Join(shared, "a"), filepath.Join(shared, "b")
			cands := filepath.Join(shared, "cands")
			if err := os.WriteFile(cands, []byte(a+"\n\n"+b+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			withlock := []string{filepath.Join(binDir, "withlock")}
			if k.asOther {
				withlock = append([]string{unprivWrapper}, withlock...)
			}
			const note = "withlock: fair-waiting queue not used (a wait is unqueued): queue dir "
			cmd := func(args ...string) *exec.Cmd {
				argv := append([]string{}, withlock...)
				if args[0] == "who" { // who takes its flags after "who"
					argv, args = append(argv, "who"), args[1:]
				}
				argv = append(append(argv, "--lock-dir", locks), args...)
				return exec.Command(argv[0], argv[1:]...)
			}
			run := func(want int, args ...string) string {
				t.Helper()
				out, err := cmd(args...).CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != want {
					t.Errorf("withlock %s: exit %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
				}
				return string(out)
			}
			who := func(want int, args ...string) {
				t.Helper()
				out := run(want, append([]string{"who"}, args...)...)
				if !k.asOther && !strings.Contains(out, "queue: not used (withlock waits unqueued): ") {
					t.Errorf("withlock who %s does not name the queue as not used:\n%s", strings.Join(args, " "), out)
				}
			}
			out := run(0, "-v", "--paths", a, "--", "true")
			if !k.asOther && !strings.Contains(out, note+queue) {
				t.Errorf("withlock -v on a free path does not say the queue is not used:\n%s", out)
			}
			run(0, "--slots", "1", "--", "true")
			run(0, "--first-of", "--candidates-from", cands, "--", "true")
			run(0, "--wait", "10s", "--paths", a, "--", "true")
			who(0, a)

			held := holdLockOf(t, locks, a)
			run(75, "--paths", a, "--", "true")
			// A wait that runs out: the waiter tries to join the queue.
			if out := run(75, "-v", "--wait", "300ms", "--paths", a, "--", "true"); !strings.Contains(out, note+queue) {
				t.Errorf("withlock -v --wait on a busy path does not say the queue is not used:\n%s", out)
			}
			run(0, "--first-of", "--candidates-from", cands, "--", "true")
			who(75, a)
			// A waiter runs once the holder ends.
			w := cmd("--wait", "60s", "--paths", a, "--", "true")
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Process.Kill(); w.Wait() })
			waitUntil(t, 20*time.Second, "the waiter blocked on a's lock", func() bool { return blockedOn(held) })
			held.Close()
			if err := w.Wait(); err != nil {
				t.Errorf("the waiter, after the holder ended: %v, want exit 0", err)
			}
		})
	}
}

// holdLockOf locks path p's lock file in locks (creating it) as a process
// outside withlock; closing the file releases it.
func holdLockOf(t *testing.T, locks, p string) *os.File {
	t.Helper()
	c, err := pathlock.Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(locks, pathlock.LockName(c)), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// Another user's withlock opens it too (read-write, as lock files
	// are opened).
	if err := f.Chmod(0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return f
}

// blockedOn reports whether /proc/locks shows a process blocked in flock(2)
// on f's file.
func blockedOn(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	for _, l := range lockfile.ParseProcLocks(data) {
		if l.Waiter && l.Inode == ino {
			return true
		}
	}
	return false
}
