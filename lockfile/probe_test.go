package lockfile

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestProbeMissing(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir + "/none.lock", dir + "/no/such/dir/x.lock"} {
		held, hs, err := ProbeShared(p)
		if held || hs != nil || err != nil {
			t.Errorf("ProbeShared(%s) = %v, %v, %v; want false, nil, nil", p, held, hs, err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created (lstat: %v)", p, err)
		}
	}
	if _, _, err := ProbeShared(""); err == nil {
		t.Error("empty path: no error")
	}
}

func TestProbeFree(t *testing.T) {
	p := t.TempDir() + "/free.lock"
	if err := os.WriteFile(p, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	held, hs, err := ProbeShared(p)
	if held || hs != nil || err != nil {
		t.Fatalf("ProbeShared = %v, %v, %v; want false, nil, nil", held, hs, err)
	}
	// Not held any more by us: an exclusive non-blocking lock succeeds.
	probeTestMustLockEx(t, p)
	after, _ := os.Stat(p)
	if b, _ := os.ReadFile(p); string(b) != "keep me" || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("file changed: %q, mtime %v -> %v", b, before.ModTime(), after.ModTime())
	}
}

func TestProbeHeldByFlockCommand(t *testing.T) {
	flockBin := probeTestNeed(t, "flock")
	p, ino := probeTestFile(t)
	cmd := probeTestStart(t, exec.Command(flockBin, p, "sleep", "30"))
	probeTestWaitExclusive(t, ino)

	held, hs, err := ProbeShared(p)
	if err != nil || !held {
		t.Fatalf("ProbeShared = %v, %v, %v; want held", held, hs, err)
	}
	found := false
	for _, h := range hs {
		if h.Shared {
			t.Errorf("shared holder %+v reported", h)
		}
		// flock(1) places the lock and its child "sleep" inherits it.
		if h.Pid == cmd.Process.Pid {
			found = true
		}
	}
	if !found {
		t.Errorf("holders %+v do not name flock's pid %d", hs, cmd.Process.Pid)
	}
	t.Logf("held by %v", hs)

	// Probing while held does not take the lock away or break it: the
	// holder still has it, and our probe did not leave a lock behind.
	if held, _, _ := ProbeShared(p); !held {
		t.Error("second probe: not held")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		held, _, err := ProbeShared(p)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still held 10 s after the holder was killed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProbeHeldByPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("python3 not found")
		}
		t.Fatal("python3 not found, and CI is set: the legacy-lock test must run there")
	}
	p, ino := probeTestFile(t)
	script := "import fcntl, sys, time\n" +
		"f = open(sys.argv[1], 'w')\n" +
		"fcntl.flock(f, fcntl.LOCK_EX)\n" +
		"time.sleep(30)\n"
	probeTestStart(t, exec.Command(py, "-c", script, p))
	probeTestWaitExclusive(t, ino)

	held, hs, err := ProbeShared(p)
	if err != nil || !held {
		t.Fatalf("ProbeShared = %v, %v, %v; want held", held, hs, err)
	}
	if len(hs) == 0 || !strings.Contains(hs[0].Command, "fcntl") && !strings.Contains(hs[0].Command, "python") {
		t.Errorf("holders %+v do not name the python process", hs)
	}
	t.Logf("held by %v", hs)
}

func TestProbeConcurrent(t *testing.T) {
	p, _ := probeTestFile(t)
	const n, rounds = 50, 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n*rounds)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range rounds {
				held, _, err := ProbeShared(p)
				if err != nil {
					errs <- err
				} else if held {
					errs <- errors.New("held while nobody holds it exclusively")
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	probeTestMustLockEx(t, p)
}

// A blocking exclusive locker is never made to fail by probers: it waits
// at most for a probe's LOCK_SH..LOCK_UN window.
func TestProbeDoesNotBreakBlockingExclusive(t *testing.T) {
	p, _ := probeTestFile(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := ProbeShared(p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for range 200 {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatalf("blocking LOCK_EX: %v", err)
		}
		f.Close()
	}
}

func TestProbeRefusesSymlinkAndNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := dir + "/target.lock"
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := dir + "/link.lock"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dangling := dir + "/dangling.lock"
	if err := os.Symlink(dir+"/nowhere", dangling); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{link, dangling} {
		held, _, err := ProbeShared(l)
		if held || !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), "not be followed") {
			t.Errorf("ProbeShared(%s) = %v, %v; want an ErrUnsafe symlink error", l, held, err)
		}
	}
	if _, err := os.Lstat(dir + "/nowhere"); err == nil {
		t.Error("the dangling symlink's target was created")
	}

	fifo := dir + "/fifo.lock"
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo, "/dev/null"} {
		done := make(chan error, 1)
		go func() { _, _, err := ProbeShared(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ProbeShared(%s): %v; want not a regular file", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ProbeShared(%s) hangs", p)
		}
	}
}

func probeTestNeed(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found", name)
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	return p
}

func probeTestFile(t *testing.T) (string, uint64) {
	t.Helper()
	p := t.TempDir() + "/x.lock"
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return p, st.Ino
}

// probeTestStart starts cmd in its own process group, killed (with any child
// that inherited the lock) when the test ends.
func probeTestStart(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// probeTestWaitExclusive polls /proc/locks until an exclusive flock on
// inode ino is held (the device is not compared: /proc/locks may print
// another one than stat gives).
func probeTestWaitExclusive(t *testing.T, ino uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range ParseProcLocks(data) {
			if pl.Kind == "FLOCK" && pl.Write && !pl.Waiter && pl.Inode == ino {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder did not take its lock within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func probeTestMustLockEx(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("exclusive lock after probing: %v", err)
	}
}
