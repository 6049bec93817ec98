//go:build linux

package gate

// Legacy locks and pidfiles: the old, pre-cron-gate workers either flock a
// lock file or write a pidfile. A gate with legacy_locks / legacy_pidfiles
// skips its run while one of them says an old process is still running. Both
// are only looked at, never written, created, truncated or removed.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/lockfile"
)

const (
	// legacyPidMax is PID_MAX_LIMIT on 64-bit Linux (4 * 1024 * 1024), the
	// largest value /proc/sys/kernel/pid_max can be set to.
	legacyPidMax = 4194304
	// legacyClockTicks is USER_HZ, the unit of /proc/PID/stat's starttime.
	// It is 100 on every Linux architecture (sysconf(_SC_CLK_TCK), fixed by
	// the ABI, whatever the kernel's internal HZ).
	legacyClockTicks = 100
	// legacyRecycleSlack is how much later than the pidfile's mtime a
	// process's computed start may be and it still be taken as the one that
	// wrote it (see legacyRecycled): an mtime is taken from the coarse clock
	// (up to a jiffy early), and a forward step of the wall clock moves
	// btime, hence every computed start, later.
	legacyRecycleSlack = 2 * time.Second
	// legacyPidfileMax caps what is read of a pidfile.
	legacyPidfileMax = 64
)

// legacyProcRoot is where /proc is.
var legacyProcRoot = "/proc"

// CheckLegacy reports the first legacy lock or pidfile that says an old
// process is still running, or "" if none. It never modifies either file.
//
// Locks are probed first, in order, with lockfile.ProbeShared (see there for
// the microseconds-long window in which a probe can make an old worker's
// non-blocking exclusive flock fail), then pidfiles, in order, with
// PidfileAlive. A missing lock file or pidfile says nothing is running.
//
// The reason is one of
//
//	legacy lock /tmp/dependency-classifier.lock is held by pid 99 (python3 old.py)
//	pidfile /tmp/translate-worker.pid names live pid 1234 (python3 translate_worker.py)
//
// (always starting with "legacy lock " or "pidfile "). An entry that cannot
// be checked (a symlinked lock file, a pidfile that is a directory, a
// permission error) does not stop the others from being checked: if a later
// one is held, its reason is returned with a nil error; otherwise the errors
// of all entries that could not be checked are returned, joined.
func CheckLegacy(locks, pidfiles []string) (reason string, err error) {
	var errs []error
	for _, p := range locks {
		held, holders, err := lockfile.ProbeShared(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if held {
			return legacyLockReason(p, holders), nil
		}
	}
	for _, p := range pidfiles {
		r, err := legacyReadPidfile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.alive {
			return fmt.Sprintf("pidfile %s names live %s", p, r.who()), nil
		}
	}
	return "", errors.Join(errs...)
}

func legacyLockReason(path string, holders []lockfile.Holder) string {
	if len(holders) == 0 {
		// /proc/locks unreadable, or the holder is not visible here.
		return fmt.Sprintf("legacy lock %s is held by another process", path)
	}
	s := make([]string, len(holders))
	for i, h := range holders {
		s[i] = h.String()
	}
	return fmt.Sprintf("legacy lock %s is held by %s", path, strings.Join(s, ", "))
}

// PidfileAlive reports whether the pidfile at path names a live process: a
// pidfile counts as held only while its PID is alive. A missing file (no
// error), an empty or unparsable one, a PID out of range (0, negative, above
// 4194304), a process that no longer exists, a zombie, this very process, or
// a recycled PID are not alive. A PID is taken as recycled when its process
// started more than 2 s after the pidfile was last modified: the start is
// btime (/proc/stat) plus starttime (field 22 of /proc/PID/stat, in clock
// ticks of 1/100 s since boot). btime is whole seconds, so that start is up
// to 1 s early, never late: the process that wrote the pidfile is never
// taken for a recycled PID because of it (see legacyRecycled). A process of
// another user is alive (kill(pid, 0) gives EPERM: it exists).
//
// When the process exists but its /proc entry cannot be read (hidepid, no
// /proc), it is taken as alive without the zombie and reuse checks, and
// detail says so: a gate errs on the side of not starting a second worker.
//
// detail is for humans and the journal, e.g. "pid 1234 (python3
// translate_worker.py) from /tmp/translate-worker.pid", or why the file does
// not count. It never quotes the file's content, only the number parsed from
// it.
//
// Symlinks are followed: a pidfile is only read, so a link cannot make this
// write anywhere, and /run/NAME.pid links to a daemon's own directory exist.
// What a link could do, point at a FIFO, a device or a huge file, is handled:
// only a regular file is opened (stat first, fstat again after an
// O_NONBLOCK open) and at most 64 bytes are read. A path that is not a
// regular file is an error. Note that a pidfile anybody can write (e.g. in
// /tmp) can only ever keep the gate from starting its job, never start one.
//
// The PID is taken in this process's PID namespace: a pidfile written in
// another container names another process.
func PidfileAlive(path string) (alive bool, detail string, err error) {
	r, err := legacyReadPidfile(path)
	return r.alive, r.detail, err
}

// legacyPidfileResult is what PidfileAlive found.
type legacyPidfileResult struct {
	alive  bool
	pid    int    // 0 when no valid pid was read
	cmd    string // sanitized command line, "" when unknown
	detail string
}

// who gives "pid 1234 (python3 worker.py)".
func (r legacyPidfileResult) who() string {
	if r.cmd == "" {
		return fmt.Sprintf("pid %d", r.pid)
	}
	return fmt.Sprintf("pid %d (%s)", r.pid, r.cmd)
}

func legacyReadPidfile(path string) (legacyPidfileResult, error) {
	var r legacyPidfileResult
	if path == "" {
		return r, errors.New("legacy pidfile: empty path")
	}
	content, mtime, err := legacyReadSmall(path)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			r.detail = fmt.Sprintf("no pidfile %s", path)
			return r, nil
		case errors.Is(err, safeopen.ErrTooLarge):
			r.detail = fmt.Sprintf("pidfile %s is longer than %d bytes: not a pidfile", path, legacyPidfileMax)
			return r, nil
		}
		return r, err
	}

	pid, why := legacyParsePid(content)
	if why != "" {
		r.detail = fmt.Sprintf("pidfile %s %s", path, why)
		return r, nil
	}
	r.pid = pid
	if pid == os.Getpid() {
		r.detail = fmt.Sprintf("pid %d from %s is this process", pid, path)
		return r, nil
	}

	switch err := unix.Kill(pid, 0); err {
	case nil, unix.EPERM:
		// It exists (EPERM: another user's process).
	case unix.ESRCH:
		r.detail = fmt.Sprintf("pid %d from %s is not running", pid, path)
		return r, nil
	default:
		return r, fmt.Errorf("pidfile %s: checking pid %d: %w", path, pid, err)
	}

	data, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", legacyProcRoot, pid))
	var st legacyStat
	if err == nil {
		st, err = legacyParseStat(data)
		if err == nil && st.pid != pid {
			err = fmt.Errorf("it is for pid %d", st.pid)
		}
	}
	if err != nil {
		if unix.Kill(pid, 0) == unix.ESRCH {
			r.detail = fmt.Sprintf("pid %d from %s is not running", pid, path)
			return r, nil
		}
		r.alive = true
		r.detail = fmt.Sprintf("%s from %s (its /proc/%d/stat cannot be used, so it was not checked for a zombie or a reused pid: %v)",
			r.who(), path, pid, safeopen.Cause(err))
		return r, nil
	}
	r.cmd = legacyCommand(pid, st.comm)

	if st.state == 'Z' || st.state == 'X' || st.state == 'x' {
		r.detail = fmt.Sprintf("%s from %s has exited (a zombie its parent has not reaped yet)", r.who(), path)
		return r, nil
	}

	boot, err := legacyBootTime()
	if err != nil {
		r.alive = true
		r.detail = fmt.Sprintf("%s from %s (boot time unknown, so it was not checked for a reused pid: %v)", r.who(), path, safeopen.Cause(err))
		return r, nil
	}
	started := legacyStartTime(boot, st.startTicks)
	if legacyRecycled(started, mtime) {
		other := ""
		if r.cmd != "" {
			other = " (" + r.cmd + ")"
		}
		r.detail = fmt.Sprintf("pid %d from %s is now another process%s, started %s after the pidfile was written",
			pid, path, other, started.Sub(mtime).Round(time.Second))
		return r, nil
	}
	r.alive = true
	r.detail = fmt.Sprintf("%s from %s", r.who(), path)
	return r, nil
}

// legacyReadSmall reads the regular file at path (following symlinks)
// through safeopen.ReadFile — stat before the open, so that a FIFO or a
// device is never opened; O_NONBLOCK; fstat after — and returns its
// content and mtime. A file over legacyPidfileMax bytes gives
// safeopen.ErrTooLarge.
func legacyReadSmall(path string) ([]byte, time.Time, error) {
	data, st, err := safeopen.ReadFile(path, legacyPidfileMax, true)
	if err != nil {
		var fe *safeopen.FileError
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, time.Time{}, unix.ENOENT
		case errors.As(err, &fe):
			return nil, time.Time{}, fmt.Errorf("pidfile %w", fe)
		}
		return nil, time.Time{}, fmt.Errorf("pidfile %s: %w", path, safeopen.Cause(err))
	}
	return data, time.Unix(st.Mtim.Unix()), nil
}

// legacyParsePid parses a pidfile's content: decimal digits, with ASCII
// white space around them (a trailing newline). why says, without quoting
// the content, why it is not a valid pid.
func legacyParsePid(b []byte) (pid int, why string) {
	if len(b) > legacyPidfileMax {
		return 0, fmt.Sprintf("is longer than %d bytes: not a pidfile", legacyPidfileMax)
	}
	s := strings.Trim(string(b), " \t\r\n\v\f")
	if s == "" {
		return 0, "is empty"
	}
	neg := false
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, "does not hold a pid"
	}
	n, err := strconv.ParseUint(s, 10, 64)
	switch {
	case err != nil || n > legacyPidMax:
		if neg {
			return 0, "holds a negative number, not a pid"
		}
		if err != nil {
			return 0, "holds a number too large to be a pid"
		}
		return 0, fmt.Sprintf("names %d, above the largest pid %d", n, legacyPidMax)
	case neg && n != 0:
		return 0, fmt.Sprintf("names -%d, not a valid pid", n)
	case n == 0:
		return 0, "names pid 0, not a valid pid"
	}
	return int(n), ""
}

// legacyStat is what PidfileAlive reads from /proc/PID/stat.
type legacyStat struct {
	pid        int
	comm       string // raw, unsanitized
	state      byte
	startTicks uint64 // field 22: start time, clock ticks since boot
}

// legacyParseStat parses /proc/PID/stat: "PID (COMM) STATE PPID ...". COMM
// may contain spaces, parentheses, newlines and any other byte but NUL, so
// it runs from the first '(' to the LAST ')': the fields after it are all
// numbers or a one-letter state. It never panics.
func legacyParseStat(data []byte) (legacyStat, error) {
	var st legacyStat
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
	// ") S 1 ...": the kernel separates fields with one space.
	rest := data[end+1:]
	if len(rest) < 3 || rest[0] != ' ' || rest[2] != ' ' || rest[1] < 'A' || rest[1] > 'z' {
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
	st.pid, st.comm, st.state, st.startTicks = pid, string(data[open+1:end]), rest[1], start
	return st, nil
}

// legacyRecycled is the reused-PID rule: the process that now has the
// pidfile's PID is another one than the pidfile's writer when its start,
// computed as boot + starttime, is more than legacyRecycleSlack after the
// pidfile's mtime.
//
// The computed start is never later than the real one: btime in /proc/stat
// is the boot time cut down to whole seconds (so up to 1 s early, by the
// fraction of a second at which the machine booted) and starttime is cut
// down to whole clock ticks. The error is thus in the safe direction: a
// process that started before it wrote its pidfile (the writer) is never
// judged recycled on its account, whatever the boot fraction; only a clock
// step forward of more than the slack between the write and the check can
// make it so. A process that started up to about 1 s + slack after the write
// may, the other way round, still be taken as the writer: the gate then
// skips a run it could have started, which is the harmless mistake.
func legacyRecycled(started, written time.Time) bool {
	return started.After(written.Add(legacyRecycleSlack))
}

// legacyStartTime converts a starttime in clock ticks since boot to a time.
func legacyStartTime(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks/legacyClockTicks)*time.Second +
		time.Duration(ticks%legacyClockTicks)*(time.Second/legacyClockTicks))
}

// legacyBootTime gives the boot time used by the reused-PID rule. It is a
// variable so that a test can give it any fraction of a second (the one
// /proc/stat cuts off), see legacyRecycled.
var legacyBootTime = legacyProcBootTime

// legacyProcBootTime reads btime (boot time, whole seconds since the epoch,
// never later than the real boot) from /proc/stat. The file is read whole:
// its "intr" line can be longer than a scanner's default buffer on machines
// with many interrupts.
func legacyProcBootTime() (time.Time, error) {
	data, err := os.ReadFile(legacyProcRoot + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("btime in %s/stat: %w", legacyProcRoot, err)
			}
			return time.Unix(n, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in %s/stat", legacyProcRoot)
}

// legacyCommand gives pid's command line for a message, or its comm when
// that cannot be read.
func legacyCommand(pid int, comm string) string {
	if c := lockfile.ProcessCommand(pid); c != "" {
		return c
	}
	return comm
}
