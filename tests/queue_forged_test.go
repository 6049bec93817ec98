package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
)

// forged is a test's path and lock dir with a ticket forged by the test
// process: named for pid 1, listing the path's lock, held with flock how.
type forged struct {
	path, locks, ticket string
}

func forgeTicket(t *testing.T, lockDirName string, how int) forged {
	t.Helper()
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := forged{path: filepath.Join(dir, "post.md"), locks: filepath.Join(dir, lockDirName)}
	f.ticket = filepath.Join(f.locks, "withlock-queue", "t-00000000000000000001-1")
	if err := os.MkdirAll(filepath.Dir(f.ticket), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := pathlock.Canonical(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.ticket, []byte(pathlock.LockName(c)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(f.ticket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	if err := unix.Flock(int(file.Fd()), how); err != nil {
		t.Fatal(err)
	}
	markQueue(t, filepath.Dir(f.ticket))
	return f
}

// markQueue holds, until the test ends, the mark that a waiter holds on
// the queue dir while its ticket is in (an OFD read lock on the dir:
// queue_linux.go, QueueDir), without which readers do not list it.
func markQueue(t *testing.T, queue string) {
	t.Helper()
	d, err := os.Open(queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	lk := unix.Flock_t{Type: unix.F_RDLCK}
	if err := unix.FcntlFlock(d.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
}

// withlockCode runs withlock with args and returns its exit code and
// combined output.
func withlockCode(args ...string) (int, string) {
	out, err := exec.Command(filepath.Join(binDir, "withlock"), args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

// A ticket's name carries a pid, but any process that may write the queue
// dir (a shared 1777 lock dir) chooses the name: a live ticket named for
// pid 1 but held by this test process makes a newcomer yield, and the skip
// message names this process, the ticket's real holder (/proc/locks), not
// pid 1.
func TestQueueForgedTicketName(t *testing.T) {
	f := forgeTicket(t, "locks", unix.LOCK_EX)
	code, out := withlockCode("-v", "--lock-dir", f.locks, "--paths", f.path, "--", "true")
	want := "an earlier waiter (pid " + strconv.Itoa(os.Getpid()) + ", ticket " + f.ticket + ")"
	if code != 75 || !strings.Contains(out, want) {
		t.Errorf("a newcomer behind a ticket named for pid 1, held by pid %d: exit %d, output %q; want 75 and %q", os.Getpid(), code, out, want)
	}
}

// withlock who agrees with withlock on a queue that withlock does not take
// as it is: a ticket held with a shared flock only is dead to withlock
// (its probe gets in, and it runs), so who does not name it (exit 0). (A
// queue dir that is not a directory this user can use: TestPlantedQueue.)
func TestWhoAgreesOnOddQueues(t *testing.T) {
	f := forgeTicket(t, "shared", unix.LOCK_SH)
	if n, out := withlockCode("who", "--lock-dir", f.locks, f.path); n != 0 || strings.Contains(out, "queued") {
		t.Errorf("who behind a ticket held shared only: exit %d, want 0 and no waiter (withlock runs)\n%s", n, out)
	}
	if n, out := withlockCode("--lock-dir", f.locks, "--paths", f.path, "--", "true"); n != 0 {
		t.Errorf("withlock behind a ticket held shared only: exit %d, want 0\n%s", n, out)
	}
}
