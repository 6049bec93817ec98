package lockfile

import (
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crongate/crongate/internal/runner"
	"golang.org/x/sys/unix"
)

func TestParseProcLocks(t *testing.T) {
	long := "1: FLOCK  ADVISORY  WRITE 42 08:01:7 0 EOF" + strings.Repeat(" x", 400)
	tests := []struct {
		name string
		in   string
		want []ProcLock
	}{
		{"empty", "", nil},
		{"flock write",
			"2: FLOCK  ADVISORY  WRITE 2001 08:01:7864554 0 EOF\n",
			[]ProcLock{{Kind: "FLOCK", Write: true, Pid: 2001, Major: 8, Minor: 1, Inode: 7864554}}},
		{"no trailing newline, hex major and minor",
			"1: FLOCK  ADVISORY  READ 7 fe:1f:12 0 EOF",
			[]ProcLock{{Kind: "FLOCK", Pid: 7, Major: 0xfe, Minor: 0x1f, Inode: 12}}},
		{"wide device numbers",
			"1: FLOCK  ADVISORY  READ 7 103:fffff:18446744073709551615 0 EOF",
			[]ProcLock{{Kind: "FLOCK", Pid: 7, Major: 0x103, Minor: 0xfffff, Inode: 1<<64 - 1}}},
		{"waiters, nested waiter",
			"2: FLOCK  ADVISORY  WRITE 2001 08:01:9 0 EOF\n" +
				"2: -> FLOCK  ADVISORY  WRITE 2005 08:01:9 0 EOF\n" +
				"2:  -> FLOCK  ADVISORY  READ 2006 08:01:9 0 EOF\n",
			[]ProcLock{
				{Kind: "FLOCK", Write: true, Pid: 2001, Major: 8, Minor: 1, Inode: 9},
				{Kind: "FLOCK", Write: true, Waiter: true, Pid: 2005, Major: 8, Minor: 1, Inode: 9},
				{Kind: "FLOCK", Waiter: true, Pid: 2006, Major: 8, Minor: 1, Inode: 9},
			}},
		{"waiter arrow glued to kind",
			"2: ->FLOCK  ADVISORY  WRITE 2005 08:01:9 0 EOF",
			[]ProcLock{{Kind: "FLOCK", Write: true, Waiter: true, Pid: 2005, Major: 8, Minor: 1, Inode: 9}}},
		{"posix with range, OFD with pid -1",
			"1: POSIX  ADVISORY  READ 25567 fe:00:9978543 10 14\n2: OFDLCK ADVISORY  WRITE -1 fe:00:9978542 0 EOF\n",
			[]ProcLock{
				{Kind: "POSIX", Pid: 25567, Major: 0xfe, Inode: 9978543},
				{Kind: "OFDLCK", Write: true, Pid: -1, Major: 0xfe, Inode: 9978542},
			}},
		{"lease, deleg, unknown, pid 0",
			"1: LEASE  ACTIVE    READ 10 00:2a:5 0 EOF\n" +
				"2: LEASE  BREAKING  UNLCK 11 00:2a:5 0 EOF\n" +
				"3: DELEG  ACTIVE    WRITE 0 00:2a:6 0 EOF\n" +
				"4: UNKNOWN UNKNOWN  READ 12 00:2a:7 0 EOF\n",
			[]ProcLock{
				{Kind: "LEASE", Pid: 10, Minor: 0x2a, Inode: 5},
				{Kind: "LEASE", Pid: 11, Minor: 0x2a, Inode: 5},
				{Kind: "DELEG", Write: true, Pid: 0, Minor: 0x2a, Inode: 6},
				{Kind: "UNKNOWN", Pid: 12, Minor: 0x2a, Inode: 7},
			}},
		{"no inode is skipped",
			"1: ACCESS *NOINODE* READ 5 <none>:0 0 EOF\n", nil},
		{"CRLF and tabs",
			"1:\tFLOCK\tADVISORY\tWRITE\t3\t08:01:4\t0\tEOF\r\n",
			[]ProcLock{{Kind: "FLOCK", Write: true, Pid: 3, Major: 8, Minor: 1, Inode: 4}}},
		{"garbage lines around a good one",
			"hello\n\n:\n1:\n1: ->\nx: FLOCK ADVISORY WRITE 1 08:01:2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE pid 08:01:2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 08:01 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 08:01:2:3 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 zz:01:2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 08:01:-2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 08:01:0x2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1 1ffffffff:01:2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 99999999999 08:01:2 0 EOF\n" +
				"1: flock ADVISORY WRITE 1 08:01:2 0 EOF\n" +
				"1: FLOCK ADVISORY WRITE 1\n" +
				"-1: FLOCK ADVISORY WRITE 1 08:01:2 0 EOF\n" +
				"3: FLOCK  ADVISORY  WRITE 9 08:01:2 0 EOF\n" +
				"\x00\xff\xfe\n",
			[]ProcLock{{Kind: "FLOCK", Write: true, Pid: 9, Major: 8, Minor: 1, Inode: 2}}},
		{"non-ASCII", "1: FLÖCK ADVISORY WRITE 1 08:01:2 0 EOF\n1: FLOCK ADVISORY WRITE ١ 08:01:2 0 EOF\n" +
			"1: FLOCK ADVISORY WRITE 1 08:01:２ 0 EOF\n1: FLOCK\u00a0ADVISORY WRITE 1 08:01:2 0 EOF\n", nil},
		{"very long line skipped, next kept",
			long + "\n5: FLOCK  ADVISORY  READ 6 08:01:7 0 EOF\n",
			[]ProcLock{{Kind: "FLOCK", Pid: 6, Major: 8, Minor: 1, Inode: 7}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseProcLocks([]byte(tt.in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseProcLocks(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseProcLocksSample parses lines copied from /proc/locks on Linux 6.18.
func TestParseProcLocksSample(t *testing.T) {
	data, err := os.ReadFile("testdata/proc_locks.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := ParseProcLocks(data)
	if len(got) != 7 {
		t.Fatalf("got %d entries, want 7: %+v", len(got), got)
	}
	var holders, waiters int
	for _, pl := range got {
		if pl.Major != 0xfe || pl.Minor != 0 {
			t.Errorf("%+v: device not fe:00", pl)
		}
		if pl.Kind == "FLOCK" {
			if pl.Waiter {
				waiters++
			} else {
				holders++
			}
		}
	}
	if holders != 2 || waiters != 3 {
		t.Errorf("flock holders %d waiters %d, want 2 and 3", holders, waiters)
	}
}

func FuzzParseProcLocks(f *testing.F) {
	if data, err := os.ReadFile("testdata/proc_locks.txt"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("2: FLOCK  ADVISORY  WRITE 2001 08:01:7864554 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 2005 08:01:7864554 0 EOF\n"))
	f.Add([]byte("2: OFDLCK ADVISORY  WRITE -1 fe:00:9978542 0 EOF"))
	f.Add([]byte("1: ACCESS *NOINODE* READ 5 <none>:0 0 EOF\n\x00\xff"))
	f.Add([]byte("1:  ->FLOCK ADVISORY READ 0 ffffffff:ffffffff:18446744073709551615"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := ParseProcLocks(data)
		if len(got) > strings.Count(string(data), "\n")+1 {
			t.Fatalf("%d entries from %d lines", len(got), strings.Count(string(data), "\n")+1)
		}
		for _, pl := range got {
			if !holderWord(pl.Kind) {
				t.Fatalf("bad kind %q", pl.Kind)
			}
			if int64(pl.Pid) != int64(int32(pl.Pid)) {
				t.Fatalf("pid %d out of range", pl.Pid)
			}
			// Printing an entry the kernel's way parses back to it.
			access := "READ"
			if pl.Write {
				access = "WRITE"
			}
			arrow := ""
			if pl.Waiter {
				arrow = "-> "
			}
			line := fmt.Sprintf("1: %s%s ADVISORY %s %d %02x:%02x:%d 0 EOF\n", arrow, pl.Kind, access, pl.Pid, pl.Major, pl.Minor, pl.Inode)
			back := ParseProcLocks([]byte(line))
			if len(back) != 1 || back[0] != pl {
				t.Fatalf("%+v printed as %q parses back as %+v", pl, line, back)
			}
		}
	})
}

func TestHolderSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"python3 worker.py", "python3 worker.py"},
		{"a\nb\rc\td", `a\nb\rc\td`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"x\u202ey\u2028z\u0085", `x\u202ey\u2028z\u0085`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"naïve ✓ 日本", "naïve ✓ 日本"},
		{strings.Repeat("a", 70), strings.Repeat("a", 60) + "…"},
		{strings.Repeat("é", 40), strings.Repeat("é", 30) + "…"},
		{strings.Repeat("a", 58) + "\n", strings.Repeat("a", 58) + `\n`},
		{strings.Repeat("a", 59) + "\n", strings.Repeat("a", 59) + "…"},
	}
	for _, tt := range tests {
		got := holderSanitize(tt.in, 60)
		if got != tt.want {
			t.Errorf("holderSanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("holderSanitize(%q) = %q: invalid UTF-8", tt.in, got)
		}
	}
}

func TestHolderString(t *testing.T) {
	tests := []struct {
		h    Holder
		want string
	}{
		{Holder{Pid: 4242, Command: "python3 worker.py"}, "pid 4242 (python3 worker.py)"},
		{Holder{Pid: 4242}, "pid 4242"},
		{Holder{Pid: 7, Command: "flock x", Shared: true}, "pid 7 (flock x, shared)"},
		{Holder{Pid: 4242, Exited: true}, "pid 4242 (exited; the lock is kept by a descriptor it passed on)"},
		{Holder{Pid: 4243, Command: "sleep 30", Exited: true, PlacedBy: 4242}, "pid 4243 (sleep 30, inherited from pid 4242, which exited)"},
		{Holder{}, "a process not visible here"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.h, got, tt.want)
		}
	}
}

func TestHoldersUnreadableProc(t *testing.T) {
	old := holderProcRoot
	holderProcRoot = t.TempDir() + "/no-proc"
	t.Cleanup(func() { holderProcRoot = old })
	hs, err := Holders(1, 2)
	if hs != nil || err != nil {
		t.Fatalf("Holders = %v, %v; want nil, nil", hs, err)
	}
}

func TestHoldersNobody(t *testing.T) {
	_, dev, ino := holderTestFile(t)
	hs, err := Holders(dev, ino)
	if err != nil || len(hs) != 0 {
		t.Fatalf("Holders = %v, %v; want none", hs, err)
	}
}

// A placer that no longer exists, with nobody found to have inherited the
// lock: reported as exited. Pid 4194304 is PID_MAX_LIMIT, never a pid.
func TestHoldersExitedPlacer(t *testing.T) {
	_, dev, ino := holderTestFile(t)
	pl := ProcLock{Kind: "FLOCK", Write: true, Pid: 4194304, Major: unix.Major(dev), Minor: unix.Minor(dev), Inode: ino}
	waiter := ProcLock{Kind: "FLOCK", Waiter: true, Pid: os.Getpid(), Major: pl.Major, Minor: pl.Minor, Inode: ino}
	other := pl
	other.Inode++
	got := (&LockTable{locks: []ProcLock{pl, waiter, other}, readable: true}).holdersFrom(dev, ino)
	want := []Holder{{Pid: 4194304, Exited: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if s := got[0].String(); !strings.Contains(s, "exited") {
		t.Errorf("String() = %q, want it to say the placer exited", s)
	}

	// Pid 0: the placer is not visible in this PID namespace.
	pl.Pid, pl.Write = 0, false
	got = (&LockTable{locks: []ProcLock{pl}, readable: true}).holdersFrom(dev, ino)
	want = []Holder{{Shared: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pid 0: got %+v, want %+v", got, want)
	}

	// An entry for the right inode on another device whose pid cannot be
	// confirmed is not reported.
	pl.Pid, pl.Major = os.Getpid(), pl.Major+1
	if got := (&LockTable{locks: []ProcLock{pl}, readable: true}).holdersFrom(dev, ino); len(got) != 0 {
		t.Fatalf("other device: got %+v, want none", got)
	}
}

func TestHoldersFlockProcess(t *testing.T) {
	flockBin := holderTestFlock(t)
	path, dev, ino := holderTestFile(t)
	cmd := holderTestStart(t, exec.Command(flockBin, path, "sleep", "30"))

	hs := holderTestWait(t, dev, ino, func(hs []Holder) bool { return len(hs) > 0 })
	if len(hs) != 1 {
		t.Fatalf("holders %+v, want one", hs)
	}
	h := hs[0]
	if h.Pid != cmd.Process.Pid || h.Shared || h.Exited || h.PlacedBy != 0 {
		t.Errorf("holder %+v, want pid %d exclusive", h, cmd.Process.Pid)
	}
	if !strings.Contains(h.Command, "flock") && !strings.Contains(h.Command, "sleep") {
		t.Errorf("command %q names neither flock nor sleep", h.Command)
	}
	t.Logf("%s", h)

	// /proc/locks prints the device as hex major:minor of st_dev.
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pl := range ParseProcLocks(data) {
		if pl.Inode == ino && pl.Pid == cmd.Process.Pid {
			found = true
			if pl.Major != unix.Major(dev) || pl.Minor != unix.Minor(dev) || pl.Kind != "FLOCK" || !pl.Write || pl.Waiter {
				t.Errorf("entry %+v, want FLOCK WRITE on %x:%x", pl, unix.Major(dev), unix.Minor(dev))
			}
		}
	}
	if !found {
		t.Errorf("no /proc/locks entry for pid %d inode %d", cmd.Process.Pid, ino)
	}
}

// Two shared holders and a blocked exclusive waiter: the waiter is not a
// holder.
func TestHoldersSharedAndWaiter(t *testing.T) {
	flockBin := holderTestFlock(t)
	path, dev, ino := holderTestFile(t)
	a := holderTestStart(t, exec.Command(flockBin, "-s", path, "sleep", "30"))
	b := holderTestStart(t, exec.Command(flockBin, "-s", path, "sleep", "30"))
	holderTestWait(t, dev, ino, func(hs []Holder) bool { return len(hs) == 2 })
	w := holderTestStart(t, exec.Command(flockBin, "-x", path, "true"))
	deadline := time.Now().Add(10 * time.Second)
	for !holderTestIsWaiter(t, w.Process.Pid, ino) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never showed as a waiter in /proc/locks", w.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	hs, err := Holders(dev, ino)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	for _, h := range hs {
		if !h.Shared || h.Exited {
			t.Errorf("holder %+v, want shared", h)
		}
		pids[h.Pid] = true
	}
	if len(hs) != 2 || !pids[a.Process.Pid] || !pids[b.Process.Pid] {
		t.Errorf("holders %+v, want pids %d and %d", hs, a.Process.Pid, b.Process.Pid)
	}
}

// flock(1) takes the lock, runs sh, which starts sleep in the background and
// exits; flock then exits too. The sleep inherited flock's descriptor and
// keeps the lock, which /proc/locks still attributes to flock's pid (or to
// pid 0 outside the initial PID namespace). cmd.Output returns once flock
// exited and was reaped, so there is nothing to wait for.
func TestHoldersInherited(t *testing.T) {
	flockBin := holderTestFlock(t)
	path, dev, ino := holderTestFile(t)
	cmd := exec.Command(flockBin, path, "sh", "-c", "sleep 30 >/dev/null 2>&1 </dev/null & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	placer := 0
	if cmd.Process != nil {
		placer = cmd.Process.Pid
		// The background sleep is in the process group flock led.
		t.Cleanup(func() { syscall.Kill(-placer, syscall.SIGKILL) })
	}
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	sleepPid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("sh printed %q: %v", out, err)
	}
	t.Cleanup(func() { syscall.Kill(sleepPid, syscall.SIGKILL) })

	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks:", err)
	}
	shown := -1
	for _, pl := range ParseProcLocks(data) {
		if pl.Inode == ino && pl.Kind == "FLOCK" && !pl.Waiter {
			shown = pl.Pid
		}
	}
	switch shown {
	case -1:
		t.Fatalf("lock on inode %d not in /proc/locks", ino)
	case placer, 0:
	default:
		t.Fatalf("/proc/locks gives pid %d, want flock's %d (or 0)", shown, placer)
	}

	hs, err := Holders(dev, ino)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 {
		t.Fatalf("holders %+v, want one", hs)
	}
	h := hs[0]
	if h.Pid != sleepPid || !strings.Contains(h.Command, "sleep") {
		t.Errorf("holder %+v, want pid %d running sleep", h, sleepPid)
	}
	if shown == placer && (!h.Exited || h.PlacedBy != placer) {
		t.Errorf("holder %+v, want Exited and PlacedBy %d", h, placer)
	}
	t.Logf("%s", h)
}

// A hostile command line cannot put a newline into the message.
func TestHoldersHostileCommand(t *testing.T) {
	flockBin := holderTestFlock(t)
	path, dev, ino := holderTestFile(t)
	cmd := exec.Command(flockBin, path, "sleep", "30")
	// argv[0] comes first in /proc/PID/cmdline, before the long temp path.
	cmd.Args[0] = "line1\nline2\x1b[2J\u202e"
	holderTestStart(t, cmd)
	hs := holderTestWait(t, dev, ino, func(hs []Holder) bool { return len(hs) > 0 })
	if len(hs) != 1 || hs[0].Pid != cmd.Process.Pid {
		t.Fatalf("holders %+v, want pid %d", hs, cmd.Process.Pid)
	}
	s := hs[0].String()
	if strings.ContainsAny(s, "\n\r\x1b\u202e") {
		t.Errorf("String() = %q has control characters", s)
	}
	if !strings.Contains(s, `line1\nline2\x1b[2J\u202e`) || !strings.HasSuffix(s, "…)") {
		t.Errorf("String() = %q, want escapes and a cut", s)
	}
	if len(hs[0].Command) > holderCmdMax+len("…") {
		t.Errorf("command %q longer than %d bytes", hs[0].Command, holderCmdMax)
	}
	t.Logf("%s", s)
}

func holderTestFlock(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) from util-linux not found")
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	return p
}

func holderTestFile(t *testing.T) (path string, dev, ino uint64) {
	t.Helper()
	path = t.TempDir() + "/x.lock"
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return path, uint64(st.Dev), st.Ino
}

// holderTestStart starts a command in its own process group and kills the
// group when the test ends (flock's child would keep the lock otherwise).
func holderTestStart(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// holderTestWait polls Holders until ok accepts the answer.
func holderTestWait(t *testing.T, dev, ino uint64, ok func([]Holder) bool) []Holder {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		hs, err := Holders(dev, ino)
		if err != nil {
			t.Fatal(err)
		}
		if ok(hs) {
			return hs
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting; last holders %+v", hs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func holderTestIsWaiter(t *testing.T, pid int, ino uint64) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range ParseProcLocks(data) {
		if pl.Waiter && pl.Pid == pid && pl.Inode == ino {
			return true
		}
	}
	return false
}

// TestHolderJustReleased: a placer that is alive but no longer holds the
// lock (it released it between our failed flock and the /proc/locks read)
// is named as the holder, never as "exited".
func TestHolderJustReleased(t *testing.T) {
	root := t.TempDir()
	old := holderProcRoot
	holderProcRoot = root
	t.Cleanup(func() { holderProcRoot = old })
	const pid = 4242
	dir := fmt.Sprintf("%s/%d", root, pid)
	os.MkdirAll(dir+"/fd", 0o755)
	os.MkdirAll(dir+"/fdinfo", 0o755)
	os.WriteFile(dir+"/stat", []byte("4242 (python3) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n"), 0o644)
	os.WriteFile(dir+"/cmdline", []byte("python3\x00worker.py\x00"), 0o644)
	all := ParseProcLocks([]byte("1: FLOCK  ADVISORY  WRITE 4242 08:01:777 0 EOF\n"))
	hs := (&LockTable{locks: all, readable: true}).holdersFrom(unix.Mkdev(8, 1), 777)
	if len(hs) != 1 || hs[0].Pid != pid || hs[0].Exited || !strings.Contains(hs[0].String(), "worker.py") {
		t.Fatalf("holders = %+v (%v)", hs, hs)
	}
}

// TestLockTable: one reading of /proc/locks answers for any number of
// files, without opening or locking them: a lock file held by this
// process, a free one, a missing one (free, exists false), a symlink
// (refused, not followed); an unreadable /proc/locks knows nothing.
func TestLockTable(t *testing.T) {
	held, _, _ := holderTestFile(t)
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	free, _, _ := holderTestFile(t)
	link := t.TempDir() + "/link.lock"
	if err := os.Symlink(held, link); err != nil {
		t.Fatal(err)
	}
	tb := ReadLockTable()
	if !tb.Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	exists, hs, err := tb.HoldersOf(held)
	if err != nil || !exists || len(hs) != 1 || hs[0].Pid != os.Getpid() || hs[0].Shared || hs[0].Started.After(time.Now()) {
		t.Errorf("held: %v %+v %v", exists, hs, err)
	}
	// The start time, where /proc gives one: qemu-user's emulated
	// /proc/PID/stat of its own process has no start time (the ARM
	// tests run there), and Started is then zero, "unknown".
	if len(hs) == 1 && hs[0].Started.IsZero() && runner.StartTicks(os.Getpid()) != 0 {
		t.Errorf("held: no start time for pid %d, which /proc gives one", hs[0].Pid)
	}
	if exists, hs, err := tb.HoldersOf(free); err != nil || !exists || len(hs) != 0 {
		t.Errorf("free: %v %+v %v", exists, hs, err)
	}
	if exists, hs, err := tb.HoldersOf(t.TempDir() + "/none/x.lock"); err != nil || exists || len(hs) != 0 {
		t.Errorf("missing: %v %+v %v", exists, hs, err)
	}
	if _, _, err := tb.HoldersOf(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
	old := holderProcRoot
	holderProcRoot = t.TempDir()
	defer func() { holderProcRoot = old }()
	if tb := ReadLockTable(); tb.Readable() {
		t.Error("a missing /proc/locks is readable")
	} else if _, hs, err := tb.HoldersOf(held); err != nil || len(hs) != 0 {
		t.Errorf("unreadable table: %+v %v", hs, err)
	}
}

// procShownToAll: a proc mount at /proc without hidepid, or with
// hidepid=0/off, shows command lines to all; any other hidepid, no proc
// mount at /proc, or garbage does not; the topmost (last) mount decides.
func TestProcShownToAll(t *testing.T) {
	const plain = "22 1 0:5 / /proc rw,nosuid - proc proc rw\n"
	for _, c := range []struct {
		mountinfo string
		want      bool
	}{
		{plain, true},
		{"22 1 0:5 / /proc rw shared:12 - proc proc rw,hidepid=0\n", true},
		{"22 1 0:5 / /proc rw - proc proc rw,hidepid=off,subset=pid\n", true},
		{"22 1 0:5 / /proc rw - proc proc rw,hidepid=invisible\n", false},
		{"22 1 0:5 / /proc rw - proc proc rw,hidepid=2\n", false},
		{"22 1 0:5 / /proc rw - proc proc rw,hidepid=1,gid=4\n", false},
		{"22 1 0:5 / /proc rw - proc proc rw,hidepid=ptraceable\n", false},
		{plain + "65 22 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible\n", false},
		{"65 22 0:39 / /proc rw - proc proc rw,hidepid=2\n" + plain, true},
		{"22 1 0:5 / /mnt/proc rw - proc proc rw\n", false},
		{"22 1 0:5 / /proc rw - tmpfs none rw\n", false},
		{"", false},
		{"garbage - \n - \n", false},
	} {
		if got := procShownToAll([]byte(c.mountinfo)); got != c.want {
			t.Errorf("procShownToAll(%q) = %v, want %v", c.mountinfo, got, c.want)
		}
	}
}

// FuzzProcShownToAll: any mountinfo text, no panic.
func FuzzProcShownToAll(f *testing.F) {
	f.Add([]byte("22 1 0:5 / /proc rw - proc proc rw,hidepid=2\n"))
	f.Fuzz(func(t *testing.T, b []byte) { procShownToAll(b) })
}
