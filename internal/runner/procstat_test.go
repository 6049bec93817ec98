package runner

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseProcStat(t *testing.T) {
	tail := " S 7 1 1 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 1 0 123456 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	for _, comm := range []string{"sleep", "", "a b", "x) S 1 2 3 (y", ")", "((", "a\nb", "python3 w.py) Z 9"} {
		data := []byte("4242 (" + comm + ")" + tail)
		st, err := ParseProcStat(data)
		if err != nil {
			t.Errorf("comm %q: %v", comm, err)
			continue
		}
		if st.Pid != 4242 || st.Comm != comm || st.State != 'S' || st.Ppid != 7 || st.Pgrp != 1 || st.StartTicks != 123456 || st.CPUTicks != 12 {
			t.Errorf("comm %q: got %+v", comm, st)
		}
	}
	// qemu-user's emulated stat of its own process: state "0", the start
	// time in its place.
	qemu := "8193 (p.test) 0 8136 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 2048591 0 0 0 0 0 365080610800 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	if st, err := ParseProcStat([]byte(qemu)); err != nil || st.Pid != 8193 || st.State != '0' || st.StartTicks != 2048591 {
		t.Errorf("qemu-user's stat: %+v, %v", st, err)
	}
	for _, bad := range []string{
		"", "4242", "4242 (x", "4242 x)", "4242 (x) 1" + tail[2:], "(x)" + tail, "-1 (x)" + tail, "4242 (x)", "4242 (x) S 1 2",
		"4242 (x)S" + tail[2:], "4242 (x) SS" + tail[2:], "4242 (x) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 -5 1",
		"99999999999999999999 (x)" + tail, "4242 (x)\x00 0 0", "4242 (x) \x00 0 0",
	} {
		if st, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed as %+v", bad, st)
		}
	}
	// A child's, not this process's: under qemu-user (the ARM tests)
	// /proc/self/stat is qemu's imitation, with a process group of 0;
	// what cron-gate reads is always another process's.
	child := exec.Command("sleep", "60")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := child.Process.Pid
	st, err := ReadProcStat(pid)
	if pgid, _ := unix.Getpgid(pid); err != nil || st.Pid != pid || st.StartTicks == 0 || st.Pgrp != pgid || st.Pgrp != pid {
		t.Fatalf("/proc/%d/stat: %+v, %v", pid, st, err)
	}
	if got := StartTicks(pid); got != st.StartTicks {
		t.Errorf("StartTicks = %d, want %d", got, st.StartTicks)
	}
	boot, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	if started := StartTime(boot, st.StartTicks); started.After(time.Now().Add(2*time.Second)) || time.Since(started) > time.Hour {
		t.Errorf("this test process started at %v?", started)
	}
}

// TestBootTime checks the direction of /proc/stat's error: the boot time
// read is never later than the real one, and less than a second earlier
// (a boot time rounded up would make the legacy pidfile probe (package gate) take a process that
// wrote its pidfile for a recycled PID).
func TestBootTime(t *testing.T) {
	got, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	real := realBoot(t)
	// real is exact to the microseconds between two clock reads.
	if got.After(real.Add(time.Millisecond)) || !got.After(real.Add(-time.Second-time.Millisecond)) {
		t.Errorf("boot time from /proc/stat %v, real boot time %v: want at most 1 s earlier, never later", got, real)
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

// FuzzParse: /proc/PID/stat's comm is chosen by the process, so the
// parser meets hostile bytes; it never panics and finds the comm and the
// state where the kernel writes them.
func FuzzParseProcStat(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("1 (systemd) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 4 5 6 7\n"))
	f.Add([]byte("7 (a) b) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n"))
	f.Add([]byte("7 ()"))
	f.Add([]byte(")(("))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseProcStat(data)
		if err != nil {
			return
		}
		if st.Pid < 0 || st.State == ' ' || st.State == '\n' || strings.Contains(st.Comm, "\x00") && !strings.Contains(string(data), "\x00") {
			t.Errorf("%q parsed as %+v", data, st)
		}
		// The comm found is delimited as the kernel writes it.
		if !strings.Contains(string(data), "("+st.Comm+") "+string(st.State)) {
			t.Errorf("%q: comm %q, state %c not found as written", data, st.Comm, st.State)
		}
	})
}

// TestStartsOf: this process started in the past, after boot; a PID that
// is not there, or not a PID, started at no known time.
func TestStartsOf(t *testing.T) {
	var s ProcessStarts
	got := s.Of(os.Getpid())
	boot, err := BootTime()
	if err != nil {
		t.Skipf("no boot time here: %v", err)
	}
	if got.IsZero() || got.Before(boot) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("Of(self) = %v; want between boot %v and now", got, boot)
	}
	for _, pid := range []int{0, -1, 1 << 30} {
		if got := s.Of(pid); !got.IsZero() {
			t.Errorf("Of(%d) = %v; want zero", pid, got)
		}
	}
}
