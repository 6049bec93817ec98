//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

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

// queueIn makes a lock dir in a fresh shared dir (1777, as docs allow) with
// its queue dir, and returns both.
func queueIn(t *testing.T) (locks, queue string) {
	t.Helper()
	shared, err := os.MkdirTemp("", "withlock-queue-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	shared, _ = filepath.EvalSymlinks(shared)
	locks, queue = filepath.Join(shared, "locks"), filepath.Join(shared, "locks", "withlock-queue")
	for _, d := range []string{locks, queue} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	return locks, queue
}

// ticketOpens runs withlock args and counts the tickets (t-*) it opens in
// queue, through inotify (IN_OPEN on the queue dir).
func ticketOpens(t *testing.T, queue string, want int, args ...string) int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, queue, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	if code, out := withlockCode(args...); code != want {
		t.Fatalf("withlock %s: exit %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
	}
	opens := 0
	buf := make([]byte, 1<<20)
	for {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			return opens
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			if strings.HasPrefix(name, "t-") {
				opens++
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				opens += 1 << 20
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// Dead tickets cost a call the same whatever their number (issue 32, item
// 3): 3,000 dead tickets of another user (which this one may not remove
// from the sticky queue dir) make a call open at most a bounded few of
// them (the pruning of a scan), with no waiter in the queue or with one
// (the queue marked). Before, every call opened every ticket: 100,000 of
// them made each call take 1-2 s (docs/benchmarks.md).
func TestDeadTicketsBounded(t *testing.T) {
	locks, queue := queueIn(t)
	const dead = 3000
	for i := range dead {
		p := filepath.Join(queue, fmt.Sprintf("t-%020d-%d", i+1, 1000+i))
		if err := os.WriteFile(p, []byte("0.lock\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	// At most prunePerScan (queue_linux.go) per scan; a call scans once
	// on a free path.
	const bound = 16
	p := filepath.Join(filepath.Dir(locks), "p")
	if n := ticketOpens(t, queue, 0, "--lock-dir", locks, "--paths", p, "--", "true"); n > bound {
		t.Errorf("with %d dead tickets and no waiter, a free call opened %d tickets; want at most %d", dead, n, bound)
	}
	markQueue(t, queue) // a waiter is in (its ticket elsewhere in the queue)
	if n := ticketOpens(t, queue, 0, "--lock-dir", locks, "--paths", p, "--", "true"); n > bound {
		t.Errorf("with %d dead tickets and a waiter in the queue, a free call opened %d tickets; want at most %d", dead, n, bound)
	}
	if n := ticketOpens(t, queue, 0, "who", "--lock-dir", locks, p); n > 0 {
		t.Errorf("with %d dead tickets, who opened %d of them; want none (liveness from /proc/locks)", dead, n)
	}
}

// A ticket's size is bounded, and who's memory with it (issue 32, item 3):
// eight live tickets of 16 MiB each, the first line of each naming our
// path's lock, make withlock yield (75) and who name the waiter (75) in
// bounded memory. Before, who read every ticket whole and kept every line
// of it: eight 16 MiB tickets cost it 75-330 MB (docs/benchmarks.md).
func TestBigTicketsBounded(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	locks, queue := queueIn(t)
	p := filepath.Join(filepath.Dir(locks), "p")
	c, err := pathlock.Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		f, err := os.Create(filepath.Join(queue, fmt.Sprintf("t-%020d-1", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		// A line per lock name, as a waiter's ticket has, 16 MiB of them,
		// written from a small buffer (see rss below).
		line := []byte(pathlock.LockName(c) + "\n")
		chunk := bytes.Repeat(line, (64<<10)/len(line))
		for range (16 << 20) / len(chunk) {
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	markQueue(t, queue)
	// A child's max RSS counts the memory it shares with this process
	// between fork and exec (vfork), so it is judged above this one's.
	debug.FreeOSMemory()
	base := selfRSS(t)
	cmd := exec.Command(filepath.Join(binDir, "withlock"), "who", "--lock-dir", locks, p)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 75 || !strings.Contains(string(out), "queued: an earlier waiter") {
		t.Errorf("who behind eight 16 MiB tickets naming its path: exit %d, want 75 naming the waiter; output:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	// Max RSS in KiB: about 8 MiB now (one 1 MiB ticket buffer), 75 MiB
	// or more before (every ticket whole, and every line of it).
	if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > base+32<<10 {
		t.Errorf("who behind eight 16 MiB tickets: max RSS %d KiB (this process: %d KiB); want it bounded (under 32 MiB more), whatever the tickets' size", rss, base)
	}
	if code, out := withlockCode("--lock-dir", locks, "--paths", p, "--", "true"); code != 75 {
		t.Errorf("withlock behind eight 16 MiB tickets naming its path: exit %d, want 75; output:\n%s", code, out)
	}
}

// selfRSS is this process's resident set size, in KiB (/proc/self/status).
func selfRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("/proc/self/status is not readable here")
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}
