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

// A ticket's name carries a pid, but any process that may write the queue
// dir (a shared 1777 lock dir) chooses the name: a live ticket named for
// pid 1 but held by this test process makes a newcomer yield, and the skip
// message names this process, the ticket's real holder (/proc/locks), not
// pid 1.
func TestQueueForgedTicketName(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(dir, "locks")
	qdir := filepath.Join(locks, "withlock-queue")
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "post.md")
	c, err := pathlock.Canonical(path)
	if err != nil {
		t.Fatal(err)
	}
	ticket := filepath.Join(qdir, "t-00000000000000000001-1")
	if err := os.WriteFile(ticket, []byte(pathlock.LockName(c)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "withlock"), "-v", "--lock-dir", locks, "--paths", path, "--", "true")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	want := "an earlier waiter (pid " + strconv.Itoa(os.Getpid()) + ", ticket " + ticket + ")"
	if code != 75 || !strings.Contains(string(out), want) {
		t.Errorf("a newcomer behind a ticket named for pid 1, held by pid %d: exit %d, output %q; want 75 and %q", os.Getpid(), code, out, want)
	}
}
