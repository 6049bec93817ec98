package gate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
)

func TestPidfileAliveLive(t *testing.T) {
	cmd := legacyTestStart(t, "sleep", "30")
	p := legacyTestPidfile(t, strconv.Itoa(cmd.Process.Pid)+"\n")
	alive, detail, err := PidfileAlive(p)
	if err != nil || !alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want alive", alive, detail, err)
	}
	want := fmt.Sprintf("pid %d (sleep 30) from %s", cmd.Process.Pid, p)
	if detail != want {
		t.Errorf("detail %q, want %q", detail, want)
	}
	// Surrounding white space is tolerated.
	legacyTestWrite(t, p, fmt.Sprintf("  \t%d \r\n\n", cmd.Process.Pid))
	if alive, detail, err := PidfileAlive(p); err != nil || !alive {
		t.Errorf("with white space: %v, %q, %v; want alive", alive, detail, err)
	}
}

func TestPidfileAliveDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	p := legacyTestPidfile(t, strconv.Itoa(pid)+"\n")
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want not alive", alive, detail, err)
	}
	if want := fmt.Sprintf("pid %d from %s is not running", pid, p); detail != want {
		t.Errorf("detail %q, want %q", detail, want)
	}
}

func TestPidfileAliveBadContent(t *testing.T) {
	secret := "s3cret-token"
	for _, c := range []struct{ content, why string }{
		{"", "is empty"},
		{" \n\t\n", "is empty"},
		{"hello\n", "does not hold a pid"},
		{secret, "does not hold a pid"},
		{"12 34\n", "does not hold a pid"},
		{"+12\n", "does not hold a pid"},
		{"0x1f\n", "does not hold a pid"},
		{"123\nport=8080\n", "does not hold a pid"},
		{"12\x00", "does not hold a pid"},
		{"\u00a012\n", "does not hold a pid"},
		{"-\n", "does not hold a pid"},
		{"0\n", "names pid 0, not a valid pid"},
		{"-0\n", "names pid 0, not a valid pid"},
		{"000\n", "names pid 0, not a valid pid"},
		{"-5\n", "names -5, not a valid pid"},
		{"-99999999999999999999999\n", "holds a negative number, not a pid"},
		{"4194305\n", "names 4194305, above the largest pid 4194304"},
		{"99999999999999999999999\n", "holds a number too large to be a pid"},
		{strings.Repeat("1", 65), "is longer than 64 bytes: not a pidfile"},
		{"1" + strings.Repeat(" ", 100), "is longer than 64 bytes: not a pidfile"},
	} {
		p := legacyTestPidfile(t, c.content)
		alive, detail, err := PidfileAlive(p)
		if err != nil || alive {
			t.Errorf("%q: %v, %q, %v; want not alive, no error", c.content, alive, detail, err)
			continue
		}
		if want := "pidfile " + p + " " + c.why; detail != want {
			t.Errorf("%q: detail %q, want %q", c.content, detail, want)
		}
		if strings.Contains(detail, secret) {
			t.Errorf("detail %q quotes the file", detail)
		}
	}
}

func TestPidfileAliveMissing(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir + "/none.pid", dir + "/no/dir/x.pid"} {
		alive, detail, err := PidfileAlive(p)
		if err != nil || alive || detail != "no pidfile "+p {
			t.Errorf("PidfileAlive(%s) = %v, %q, %v; want not alive, no error", p, alive, detail, err)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

func TestPidfileAliveRecycled(t *testing.T) {
	before := time.Now()
	cmd := legacyTestStart(t, "sleep", "30")
	p := legacyTestPidfile(t, strconv.Itoa(cmd.Process.Pid))
	old := before.Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want not alive (recycled pid)", alive, detail, err)
	}
	if !strings.Contains(detail, "is now another process (sleep 30), started 1h0m") {
		t.Errorf("detail %q", detail)
	}
	// Within the slack it is the same process: a pidfile written a
	// second before the process shows as started (btime is whole seconds).
	recent := before.Add(-time.Second)
	if err := os.Chtimes(p, recent, recent); err != nil {
		t.Fatal(err)
	}
	if alive, detail, err := PidfileAlive(p); err != nil || !alive {
		t.Errorf("mtime 1 s before start: %v, %q, %v; want alive", alive, detail, err)
	}
}

func TestPidfileAliveZombie(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		st, err := legacyParseStat(data)
		if err != nil {
			t.Fatal(err)
		}
		if st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not a zombie after 10 s (state %c)", pid, st.state)
		}
		time.Sleep(2 * time.Millisecond)
	}
	p := legacyTestPidfile(t, strconv.Itoa(pid))
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want not alive (zombie)", alive, detail, err)
	}
	if !strings.Contains(detail, "zombie") || !strings.Contains(detail, fmt.Sprintf("pid %d (sh)", pid)) {
		t.Errorf("detail %q", detail)
	}
	cmd.Wait()
}

func TestPidfileAliveSelf(t *testing.T) {
	p := legacyTestPidfile(t, strconv.Itoa(os.Getpid()))
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive || !strings.Contains(detail, "is this process") {
		t.Errorf("PidfileAlive = %v, %q, %v; want not alive (this process)", alive, detail, err)
	}
}

// Symlinks are followed (pidfiles are only read); FIFOs, directories and
// devices are refused without hanging.
func TestPidfileAliveSymlinkAndNonRegular(t *testing.T) {
	cmd := legacyTestStart(t, "sleep", "30")
	target := legacyTestPidfile(t, strconv.Itoa(cmd.Process.Pid))
	dir := t.TempDir()
	link := dir + "/link.pid"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if alive, detail, err := PidfileAlive(link); err != nil || !alive || !strings.Contains(detail, "from "+link) {
		t.Errorf("via symlink: %v, %q, %v; want alive", alive, detail, err)
	}
	dangling := dir + "/dangling.pid"
	if err := os.Symlink(dir+"/nowhere", dangling); err != nil {
		t.Fatal(err)
	}
	if alive, _, err := PidfileAlive(dangling); err != nil || alive {
		t.Errorf("dangling symlink: %v, %v; want missing", alive, err)
	}

	fifo := dir + "/fifo.pid"
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	fifoLink := dir + "/fifolink.pid"
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo, fifoLink, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, _, err := PidfileAlive(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("PidfileAlive(%s): %v; want not a regular file", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("PidfileAlive(%s) hangs", p)
		}
	}
}

// A process of another user exists: kill(pid, 0) gives EPERM. The check
// runs on one OS thread whose real and effective uid are dropped to nobody
// (the thread is thrown away afterwards), so it needs root.
func TestPidfileAliveOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a check as another user")
	}
	cmd := legacyTestStart(t, "sleep", "30") // runs as root
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	p := dir + "/x.pid"
	legacyTestWrite(t, p, strconv.Itoa(cmd.Process.Pid))
	os.Chmod(p, 0o644)

	type result struct {
		alive   bool
		detail  string
		err     error
		killErr error
		skip    string
	}
	done := make(chan result)
	go func() {
		// Never unlocked: the thread exits with the goroutine.
		runtime.LockOSThread()
		const nobody = 65534
		// Raw setresuid changes this thread only (syscall.Setresuid would
		// change every thread); the saved uid stays 0.
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, nobody, nobody, 0); e != 0 {
			done <- result{skip: "setresuid: " + e.Error()}
			return
		}
		var r result
		r.killErr = unix.Kill(cmd.Process.Pid, 0)
		r.alive, r.detail, r.err = PidfileAlive(p)
		done <- r
	}()
	r := <-done
	if r.skip != "" {
		t.Skip(r.skip)
	}
	if r.killErr != unix.EPERM {
		t.Fatalf("kill as nobody: %v, want EPERM", r.killErr)
	}
	if r.err != nil || !r.alive || !strings.Contains(r.detail, fmt.Sprintf("pid %d (sleep 30)", cmd.Process.Pid)) {
		t.Errorf("PidfileAlive as nobody = %v, %q, %v; want alive", r.alive, r.detail, r.err)
	}
}

func TestCheckLegacyFlockHolder(t *testing.T) {
	flockBin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) from util-linux not found")
	}
	dir := t.TempDir()
	lock := dir + "/dependency-classifier.lock"
	free := dir + "/free.lock"
	for _, p := range []string{lock, free} {
		legacyTestWrite(t, p, "")
	}
	var st unix.Stat_t
	if err := unix.Stat(lock, &st); err != nil {
		t.Fatal(err)
	}
	cmd := legacyTestStart(t, flockBin, lock, "sleep", "30")
	legacyTestWaitFlock(t, st.Ino)

	reason, err := CheckLegacy([]string{dir + "/missing.lock", free, lock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("legacy lock %s is held by pid %d (", lock, cmd.Process.Pid)
	if !strings.HasPrefix(reason, want) || !strings.Contains(reason, "flock") {
		t.Errorf("reason %q, want it to start with %q", reason, want)
	}
	t.Log(reason)

	// A lock that cannot be checked does not hide a held one...
	link := dir + "/link.lock"
	if err := os.Symlink(free, link); err != nil {
		t.Fatal(err)
	}
	if reason, err := CheckLegacy([]string{link, lock}, nil); err != nil || !strings.HasPrefix(reason, want) {
		t.Errorf("symlink then held: %q, %v", reason, err)
	}
	// ...and is an error when nothing is held.
	reason, err = CheckLegacy([]string{free, link}, []string{dir + "/none.pid"})
	if reason != "" || !errors.Is(err, lockfile.ErrUnsafe) {
		t.Errorf("symlink alone: %q, %v; want an ErrUnsafe error", reason, err)
	}
	// The files were not changed.
	for _, p := range []string{lock, free} {
		if fi, err := os.Lstat(p); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s changed: %v %v", p, fi, err)
		}
	}
}

func TestCheckLegacyPidfiles(t *testing.T) {
	if reason, err := CheckLegacy(nil, nil); reason != "" || err != nil {
		t.Errorf("nothing to check: %q, %v", reason, err)
	}
	dir := t.TempDir()
	cmd := legacyTestStart(t, "sleep", "30")
	live := dir + "/translate-worker.pid"
	legacyTestWrite(t, live, strconv.Itoa(cmd.Process.Pid)+"\n")
	garbage := dir + "/garbage.pid"
	legacyTestWrite(t, garbage, "garbage")

	reason, err := CheckLegacy([]string{dir + "/free.lock"}, []string{dir + "/missing.pid", garbage, live})
	want := fmt.Sprintf("pidfile %s names live pid %d (sleep 30)", live, cmd.Process.Pid)
	if err != nil || reason != want {
		t.Errorf("CheckLegacy = %q, %v; want %q", reason, err, want)
	}
	if reason, err := CheckLegacy(nil, []string{dir + "/missing.pid", garbage}); reason != "" || err != nil {
		t.Errorf("no live pidfile: %q, %v", reason, err)
	}
	if _, err := os.Lstat(dir + "/free.lock"); err == nil {
		t.Error("the missing legacy lock was created")
	}
}

func TestLegacyParseStat(t *testing.T) {
	tail := " S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	for _, comm := range []string{"sleep", "", "a b", "x) S 1 2 3 (y", ")", "((", "a\nb", "python3 w.py) Z 9"} {
		data := []byte("4242 (" + comm + ")" + tail)
		st, err := legacyParseStat(data)
		if err != nil {
			t.Errorf("comm %q: %v", comm, err)
			continue
		}
		if st.pid != 4242 || st.comm != comm || st.state != 'S' || st.startTicks != 123456 {
			t.Errorf("comm %q: got %+v", comm, st)
		}
	}
	for _, bad := range []string{
		"", "4242", "4242 (x", "4242 x)", "(x)" + tail, "-1 (x)" + tail, "4242 (x)", "4242 (x) S 1 2",
		"4242 (x)S" + tail[2:], "4242 (x) SS" + tail[2:], "4242 (x) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 -5 1",
		"99999999999999999999 (x)" + tail,
	} {
		if st, err := legacyParseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed as %+v", bad, st)
		}
	}
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip(err)
	}
	st, err := legacyParseStat(data)
	if err != nil || st.pid != os.Getpid() || st.startTicks == 0 {
		t.Errorf("/proc/self/stat: %+v, %v", st, err)
	}
	btime, err := legacyBootTime()
	if err != nil {
		t.Fatal(err)
	}
	if started := legacyStartTime(btime, st.startTicks); started.After(time.Now().Add(legacyRecycleSlack)) || time.Since(started) > time.Hour {
		t.Errorf("this test process started at %v?", started)
	}
}

func FuzzParseStat(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("1 (systemd) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4 5 6 7\n"))
	f.Add([]byte("7 (a) b) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n"))
	f.Add([]byte("7 ()"))
	f.Add([]byte(")(("))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := legacyParseStat(data)
		if err != nil {
			return
		}
		if st.pid < 0 || st.state == ' ' || st.state == '\n' || strings.Contains(st.comm, "\x00") && !strings.Contains(string(data), "\x00") {
			t.Errorf("%q parsed as %+v", data, st)
		}
		// The comm found is delimited as the kernel writes it.
		if !strings.Contains(string(data), "("+st.comm+") "+string(st.state)) {
			t.Errorf("%q: comm %q, state %c not found as written", data, st.comm, st.state)
		}
	})
}

// legacyTestStart starts a command in its own process group, killed (with
// its children) when the test ends.
func legacyTestStart(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	// Wait for the exec: until then /proc/PID/cmdline is the test binary's.
	want := "\x00" + strings.Join(args, "\x00")
	if len(args) == 0 {
		want = ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if strings.HasSuffix(strings.TrimSuffix(string(b), "\x00"), want) && strings.Contains(string(b), filepath.Base(name)) {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start within 10 s", name)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func legacyTestPidfile(t *testing.T, content string) string {
	t.Helper()
	p := t.TempDir() + "/x.pid"
	legacyTestWrite(t, p, content)
	return p
}

func legacyTestWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// legacyTestWaitFlock polls /proc/locks until an exclusive flock on inode
// ino is held.
func legacyTestWaitFlock(t *testing.T, ino uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Skip("no /proc/locks")
		}
		for _, pl := range lockfile.ParseProcLocks(data) {
			if pl.Kind == "FLOCK" && pl.Write && !pl.Waiter && pl.Inode == ino {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) did not take its lock within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FuzzParsePid: pidfile contents are outside input; parsing never panics
// and yields either a valid PID or a reason.
func FuzzParsePid(f *testing.F) {
	for _, s := range []string{"123\n", " 42 ", "", "0", "-1", "99999999999", "12abc", "4194304", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, why := legacyParsePid(b)
		if why == "" && (pid <= 0 || pid > 4194304) {
			t.Fatalf("legacyParsePid(%q) = %d with no reason", b, pid)
		}
		if why != "" && pid != 0 {
			t.Fatalf("legacyParsePid(%q) = %d and reason %q", b, pid, why)
		}
	})
}
