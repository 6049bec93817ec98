//go:build linux

package runner

// /proc/PID/stat: reads what cron-gate needs of /proc: a process's state
// and start time (/proc/PID/stat) and the boot time (/proc/stat). A PID
// and its start time identify a process: a recycled PID has another start
// time. It is Linux-only.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// procRoot is where /proc is.
const procRoot = "/proc"

// ClockTicks is USER_HZ, the unit of /proc/PID/stat's times. It is 100
// on every Linux architecture (sysconf(_SC_CLK_TCK), fixed by the ABI,
// whatever the kernel's internal HZ).
const ClockTicks = 100

// ProcStat is what cron-gate reads of /proc/PID/stat.
type ProcStat struct {
	Pid        int
	Comm       string // raw, unsanitized: any byte but NUL, chosen by the process
	State      byte   // field 3: R, S, D, Z, X, ...
	Ppid       int    // field 4: the parent's pid (0 for the first process of a namespace)
	Pgrp       int    // field 5: the process group
	StartTicks uint64 // field 22: start time, clock ticks since boot
	CPUTicks   uint64 // fields 14 and 15: user and system CPU time, clock ticks (0 if unreadable)
}

// ParseProcStat parses /proc/PID/stat: "PID (COMM) STATE PPID ...". COMM may
// contain spaces, parentheses, newlines and any other byte but NUL, so it
// runs from the first '(' to the LAST ')': the fields after it are all
// numbers or a one-letter state. It never panics.
func ParseProcStat(data []byte) (ProcStat, error) {
	var st ProcStat
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return st, errors.New("no (comm) field")
	}
	if open == 0 || data[open-1] != ' ' {
		return st, errors.New("bad pid field")
	}
	pidField := data[:open-1]
	if len(pidField) == 0 || len(pidField) > 10 || len(bytes.TrimLeft(pidField, "0123456789")) != 0 {
		return st, errors.New("bad pid field")
	}
	pid, err := strconv.Atoi(string(pidField))
	if err != nil {
		return st, errors.New("bad pid field")
	}
	// ") S 1 ...": the kernel separates fields with one space. The state
	// is a letter; qemu-user's emulated stat of its own process writes
	// "0" there (and real values in the fields after it), taken as such.
	rest := data[end+1:]
	if len(rest) < 3 || rest[0] != ' ' || rest[2] != ' ' || !(rest[1] >= 'A' && rest[1] <= 'z' || rest[1] == '0') {
		return st, errors.New("bad state field")
	}
	f := bytes.FieldsFunc(rest[3:], func(r rune) bool { return r == ' ' || r == '\n' })
	// f[0] is field 4 (ppid), so field 22 (starttime) is f[18].
	if len(f) < 19 {
		return st, fmt.Errorf("%d fields after the state, want at least 19", len(f))
	}
	start, err := strconv.ParseUint(string(f[18]), 10, 64)
	if err != nil {
		return st, errors.New("bad starttime field")
	}
	pgrp, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return st, errors.New("bad pgrp field")
	}
	ppid, err := strconv.Atoi(string(f[0]))
	if err != nil {
		return st, errors.New("bad ppid field")
	}
	st.Pid, st.Comm, st.State, st.Ppid, st.Pgrp, st.StartTicks = pid, string(data[open+1:end]), rest[1], ppid, pgrp, start
	utime, uerr := strconv.ParseUint(string(f[10]), 10, 64)
	stime, serr := strconv.ParseUint(string(f[11]), 10, 64)
	if uerr == nil && serr == nil {
		st.CPUTicks = utime + stime
	}
	return st, nil
}

// ProcessLive reports whether the process pid exists and is not a zombie (or
// dead): a zombie holds no file and no lock, and PID 1 may never reap it.
func ProcessLive(pid int) bool {
	st, err := ReadProcStat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// ReadProcStat reads and parses /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	data, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, err
	}
	return ParseProcStat(data)
}

// StartTicks returns the start time of a live process in clock ticks since
// boot, or 0 if there is no such process or it is a zombie.
func StartTicks(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	st, err := ReadProcStat(pid)
	if err != nil || st.State == 'Z' || st.State == 'X' {
		return 0
	}
	return st.StartTicks
}

// StartTime converts a starttime in clock ticks since boot to a time.
func StartTime(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks/ClockTicks)*time.Second +
		time.Duration(ticks%ClockTicks)*(time.Second/ClockTicks))
}

// BootTime reads btime (boot time, whole seconds since the epoch) from
// /proc/stat. It is never later than the real boot and less than a second
// earlier: the kernel cuts the fraction off. The file is read whole: its
// "intr" line can be longer than a scanner's default buffer on machines
// with many interrupts.
func BootTime() (time.Time, error) {
	data, err := os.ReadFile(procRoot + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("btime in %s/stat: %w", procRoot, err)
			}
			return time.Unix(n, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in %s/stat", procRoot)
}

// ProcessStarts tells when processes started, reading the boot time once (at its
// first use) for as many lookups as its owner makes. The zero value is
// ready.
type ProcessStarts struct {
	boot time.Time
	read bool
}

// Of returns when pid started, zero when unknown (no such process, or
// the boot time could not be read).
func (s *ProcessStarts) Of(pid int) time.Time {
	if pid <= 0 {
		return time.Time{}
	}
	if !s.read {
		s.read = true
		s.boot, _ = BootTime()
	}
	ticks := StartTicks(pid)
	if s.boot.IsZero() || ticks == 0 {
		return time.Time{}
	}
	return StartTime(s.boot, ticks)
}
