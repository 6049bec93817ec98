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

// withlock who agrees with withlock on two queues that withlock does not
// take as they are: a ticket held with a shared flock only is dead to
// withlock (its probe gets in, and it runs), so who does not name it
// (exit 0); a queue dir that is a symlink makes withlock refuse (125), and
// who says it cannot tell (125), not "free".
func TestWhoAgreesOnOddQueues(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "post.md")
	c, err := pathlock.Canonical(path)
	if err != nil {
		t.Fatal(err)
	}
	code := func(args ...string) (int, string) {
		out, err := exec.Command(filepath.Join(binDir, "withlock"), args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}

	shared := filepath.Join(dir, "shared")
	ticket := filepath.Join(shared, "withlock-queue", "t-00000000000000000001-1")
	if err := os.MkdirAll(filepath.Dir(ticket), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ticket, []byte(pathlock.LockName(c)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if n, out := code("who", "--lock-dir", shared, path); n != 0 || strings.Contains(out, "queued") {
		t.Errorf("who behind a ticket held shared only: exit %d, want 0 and no waiter (withlock runs)\n%s", n, out)
	}
	if n, out := code("--lock-dir", shared, "--paths", path, "--", "true"); n != 0 {
		t.Errorf("withlock behind a ticket held shared only: exit %d, want 0\n%s", n, out)
	}

	linked := filepath.Join(dir, "linked")
	if err := os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(linked, "withlock-queue")); err != nil {
		t.Fatal(err)
	}
	nRun, outRun := code("--lock-dir", linked, "--paths", path, "--", "true")
	nWho, outWho := code("who", "--lock-dir", linked, path)
	if nRun != 125 || nWho != 125 || !strings.Contains(outWho, "queue: unknown: ") || !strings.Contains(outWho, "symlink") {
		t.Errorf("a queue dir that is a symlink: withlock exit %d (%q), who exit %d; want both 125, who saying why:\n%s", nRun, outRun, nWho, outWho)
	}
}
