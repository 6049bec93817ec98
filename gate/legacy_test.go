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

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/lockfile"
)

func TestPidfileAliveLive(t *testing.T) {
	cmd := startCmd(t, "sleep", "30")
	p := newPidfile(t, strconv.Itoa(cmd.Process.Pid)+"\n")
	alive, detail, err := PidfileAlive(p)
	if err != nil || !alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want alive", alive, detail, err)
	}
	want := fmt.Sprintf("pid %d (sleep 30) from %s", cmd.Process.Pid, p)
	if detail != want {
		t.Errorf("detail %q, want %q", detail, want)
	}
	// Surrounding white space is tolerated.
	writeFile(t, p, fmt.Sprintf("  \t%d \r\n\n", cmd.Process.Pid))
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
	p := newPidfile(t, strconv.Itoa(pid)+"\n")
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
		p := newPidfile(t, c.content)
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
	cmd := startCmd(t, "sleep", "30")
	p := newPidfile(t, strconv.Itoa(cmd.Process.Pid))
	// The pidfile was written an hour before the process started, as the
	// rule computes that start: the message gives exactly 1h0m0s on a
	// machine booted at any fraction of a second (/proc/stat's btime is
	// whole seconds, so the real start may be up to 1 s later than this).
	boot, err := legacyBootTime()
	if err != nil {
		t.Fatal(err)
	}
	started := runner.StartTime(boot, startTicksOf(t, cmd.Process.Pid))
	setMtime(t, p, started.Add(-time.Hour))
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive {
		t.Fatalf("PidfileAlive = %v, %q, %v; want not alive (recycled pid)", alive, detail, err)
	}
	if !strings.HasSuffix(detail, " is now another process (sleep 30), started 1h0m0s after the pidfile was written") {
		t.Errorf("detail %q", detail)
	}
	// Within the slack it is the same process: a pidfile whose mtime is a
	// second before the process shows as started.
	setMtime(t, p, started.Add(-time.Second))
	if alive, detail, err := PidfileAlive(p); err != nil || !alive {
		t.Errorf("mtime 1 s before start: %v, %q, %v; want alive", alive, detail, err)
	}
}

// TestPidfileAliveBootFraction checks the reused-PID rule on machines
// booted at any fraction of a second. /proc/stat's btime cuts that fraction
// off, so the boot time the rule reads is the real one minus a fraction in
// [0, 1 s); here it is injected, from the real boot time (CLOCK_REALTIME -
// CLOCK_BOOTTIME, exact to microseconds) minus each fraction, against a
// real process and real pidfile mtimes. Whatever the fraction, the process
// that wrote its pidfile after it started (or, as the coarse clock that
// stamps an mtime allows, a jiffy "before") is alive, and one that started
// slack + 1 s after the pidfile was written is recycled.
func TestPidfileAliveBootFraction(t *testing.T) {
	cmd := startCmd(t, "sleep", "30")
	pid := cmd.Process.Pid
	p := newPidfile(t, strconv.Itoa(pid))
	ticks := startTicksOf(t, pid)
	boot := realBoot(t)
	// The process really started in [earliest, earliest + 1 tick).
	earliest := runner.StartTime(boot, ticks)
	latest := earliest.Add(time.Second / runner.ClockTicks)
	saved := legacyBootTime
	t.Cleanup(func() { legacyBootTime = saved })
	for _, frac := range []time.Duration{0, time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, 999 * time.Millisecond, time.Second - 1} {
		legacyBootTime = func() (time.Time, error) { return boot.Add(-frac), nil }
		for _, c := range []struct {
			what    string
			written time.Time
			alive   bool
		}{
			{"written just after the start", latest, true},
			{"written an hour after the start", latest.Add(time.Hour), true},
			{"mtime a jiffy before the start", earliest.Add(-10 * time.Millisecond), true},
			{"written slack + 1 s before the start", earliest.Add(-recycleSlack - time.Second - 20*time.Millisecond), false},
			{"written an hour before the start", earliest.Add(-time.Hour), false},
		} {
			setMtime(t, p, c.written)
			alive, detail, err := PidfileAlive(p)
			if err != nil || alive != c.alive {
				t.Errorf("boot fraction %v, pidfile %s: PidfileAlive = %v, %q, %v; want alive=%v", frac, c.what, alive, detail, err, c.alive)
			}
		}
	}
	// The boundary, with the exact boot time: recycled only when the
	// computed start is after mtime + slack.
	legacyBootTime = func() (time.Time, error) { return boot, nil }
	for _, c := range []struct {
		written time.Time
		alive   bool
	}{{earliest.Add(-recycleSlack), true}, {earliest.Add(-recycleSlack - time.Millisecond), false}} {
		setMtime(t, p, c.written)
		if alive, detail, err := PidfileAlive(p); err != nil || alive != c.alive {
			t.Errorf("start - mtime = %v: PidfileAlive = %v, %q, %v; want alive=%v", earliest.Sub(c.written), alive, detail, err, c.alive)
		}
	}
}

// realBoot returns the real boot time, CLOCK_REALTIME minus
// CLOCK_BOOTTIME (the kernel's own definition, of which btime is the whole
// seconds). Realtime is read first, so each estimate is early by the time
// between the reads; the latest of a few is kept.
func realBoot(t *testing.T) time.Time {
	t.Helper()
	var best time.Time
	for i := 0; i < 5; i++ {
		now := time.Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
			t.Fatal(err)
		}
		if b := now.Add(-time.Duration(ts.Nano())); b.After(best) {
			best = b
		}
	}
	return best.Round(0)
}

// startTicksOf reads pid's starttime (clock ticks since boot).
func startTicksOf(t *testing.T, pid int) uint64 {
	t.Helper()
	st, err := runner.ReadProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.StartTicks
}

func setMtime(t *testing.T, p string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	if got := time.Unix(st.Mtim.Unix()); !got.Equal(mtime) {
		t.Fatalf("mtime set to %v reads back as %v (a file system without nanosecond times?)", mtime, got)
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
		st, err := runner.ReadProcStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not a zombie after 10 s (state %c)", pid, st.State)
		}
		time.Sleep(2 * time.Millisecond)
	}
	p := newPidfile(t, strconv.Itoa(pid))
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
	p := newPidfile(t, strconv.Itoa(os.Getpid()))
	alive, detail, err := PidfileAlive(p)
	if err != nil || alive || !strings.Contains(detail, "is this process") {
		t.Errorf("PidfileAlive = %v, %q, %v; want not alive (this process)", alive, detail, err)
	}
}

// Symlinks are followed (pidfiles are only read); FIFOs, directories and
// devices are refused without hanging.
func TestPidfileAliveSymlinkAndNonRegular(t *testing.T) {
	cmd := startCmd(t, "sleep", "30")
	target := newPidfile(t, strconv.Itoa(cmd.Process.Pid))
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
	cmd := startCmd(t, "sleep", "30") // runs as root
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	p := dir + "/x.pid"
	writeFile(t, p, strconv.Itoa(cmd.Process.Pid))
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

func TestCheckFlockHolder(t *testing.T) {
	flockBin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) from util-linux not found")
	}
	dir := t.TempDir()
	lock := dir + "/dependency-classifier.lock"
	free := dir + "/free.lock"
	for _, p := range []string{lock, free} {
		writeFile(t, p, "")
	}
	var st unix.Stat_t
	if err := unix.Stat(lock, &st); err != nil {
		t.Fatal(err)
	}
	cmd := startCmd(t, flockBin, lock, "sleep", "30")
	waitFlock(t, st.Ino)

	found, err := CheckLegacy([]string{dir + "/missing.lock", free, lock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if found == nil || found.Kind != LegacyLockFile || found.Path != lock || len(found.Holders) == 0 || found.Holders[0].Pid != cmd.Process.Pid {
		t.Fatalf("Check = %+v; want lock %s held by pid %d", found, lock, cmd.Process.Pid)
	}
	reason := found.String()
	want := fmt.Sprintf("legacy lock %s is held by pid %d (", lock, cmd.Process.Pid)
	if !strings.HasPrefix(reason, want) || !strings.Contains(reason, "flock") {
		t.Errorf("reason %q, want it to start with %q", reason, want)
	}
	t.Log(reason)
	// Without /proc/locks' answer, the lock is still held, by someone.
	if s := (&LegacyFound{Kind: LegacyLockFile, Path: lock}).String(); s != "legacy lock "+lock+" is held by another process" {
		t.Errorf("no holders: %q", s)
	}

	// A lock that cannot be checked does not hide a held one...
	link := dir + "/link.lock"
	if err := os.Symlink(free, link); err != nil {
		t.Fatal(err)
	}
	if found, err := CheckLegacy([]string{link, lock}, nil); err != nil || found == nil || !strings.HasPrefix(found.String(), want) {
		t.Errorf("symlink then held: %+v, %v", found, err)
	}
	// ...and is an error when nothing is held.
	found, err = CheckLegacy([]string{free, link}, []string{dir + "/none.pid"})
	if found != nil || !errors.Is(err, lockfile.ErrUnsafe) {
		t.Errorf("symlink alone: %+v, %v; want an ErrUnsafe error", found, err)
	}
	// The files were not changed.
	for _, p := range []string{lock, free} {
		if fi, err := os.Lstat(p); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s changed: %v %v", p, fi, err)
		}
	}
}

func TestCheckPidfiles(t *testing.T) {
	if found, err := CheckLegacy(nil, nil); found != nil || err != nil {
		t.Errorf("nothing to check: %+v, %v", found, err)
	}
	dir := t.TempDir()
	cmd := startCmd(t, "sleep", "30")
	live := dir + "/translate-worker.pid"
	writeFile(t, live, strconv.Itoa(cmd.Process.Pid)+"\n")
	garbage := dir + "/garbage.pid"
	writeFile(t, garbage, "garbage")

	found, err := CheckLegacy([]string{dir + "/free.lock"}, []string{dir + "/missing.pid", garbage, live})
	if err != nil || found == nil || found.Kind != LegacyPidfileFile || found.Path != live || found.Pid != cmd.Process.Pid || found.Command != "sleep 30" {
		t.Fatalf("Check = %+v, %v; want pidfile %s naming pid %d (sleep 30)", found, err, live, cmd.Process.Pid)
	}
	want := fmt.Sprintf("pidfile %s names live pid %d (sleep 30)", live, cmd.Process.Pid)
	if reason := found.String(); reason != want {
		t.Errorf("reason %q; want %q", reason, want)
	}
	if s := (&LegacyFound{Kind: LegacyPidfileFile, Path: live, Pid: 7}).String(); s != "pidfile "+live+" names live pid 7" {
		t.Errorf("no command: %q", s)
	}
	if found, err := CheckLegacy(nil, []string{dir + "/missing.pid", garbage}); found != nil || err != nil {
		t.Errorf("no live pidfile: %+v, %v", found, err)
	}
	if _, err := os.Lstat(dir + "/free.lock"); err == nil {
		t.Error("the missing legacy lock was created")
	}
}

// startCmd starts a command in its own process group, killed (with
// its children) when the test ends.
func startCmd(t *testing.T, name string, args ...string) *exec.Cmd {
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

func newPidfile(t *testing.T, content string) string {
	t.Helper()
	p := t.TempDir() + "/x.pid"
	writeFile(t, p, content)
	return p
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFlock polls /proc/locks until an exclusive flock on inode
// ino is held.
func waitFlock(t *testing.T, ino uint64) {
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
		pid, why := parsePid(b)
		if why == "" && (pid <= 0 || pid > 4194304) {
			t.Fatalf("parsePid(%q) = %d with no reason", b, pid)
		}
		if why != "" && pid != 0 {
			t.Fatalf("parsePid(%q) = %d and reason %q", b, pid, why)
		}
	})
}
