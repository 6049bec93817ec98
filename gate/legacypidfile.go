//go:build linux

package gate

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/lockfile"
)

const (
	// pidMax is PID_MAX_LIMIT on 64-bit Linux (4 * 1024 * 1024), the
	// largest value /proc/sys/kernel/pid_max can be set to.
	pidMax = 4194304
	// recycleSlack is how much later than the pidfile's mtime a process's
	// computed start may be and it still be taken as the one that wrote
	// it (see recycled): an mtime is taken from the coarse clock (up to a
	// jiffy early), and a forward step of the wall clock moves btime,
	// hence every computed start, later.
	recycleSlack = 2 * time.Second
	// pidfileMax caps what is read of a pidfile.
	pidfileMax = 64
)

// PidfileAlive reports whether the pidfile at path names a live process: a
// pidfile counts as held only while its PID is alive. A missing file (no
// error), an empty or unparsable one, a PID out of range (0, negative, above
// 4194304), a process that no longer exists, a zombie, this very process, or
// a recycled PID are not alive. A PID is taken as recycled when its process
// started more than 2 s after the pidfile was last modified: the start is
// btime (/proc/stat) plus starttime (field 22 of /proc/PID/stat, in clock
// ticks of 1/100 s since boot). btime is whole seconds, so that start is up
// to 1 s early, never late: the process that wrote the pidfile is never
// taken for a recycled PID because of it (see recycled). A process of
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
	r, err := readPidfile(path)
	return r.alive, r.detail, err
}

// PidfileState is what a pidfile says now (ReadPidfile).
type PidfileState struct {
	Alive   bool   // it names a live process (PidfileAlive's rules)
	Pid     int    // the pid it names, 0 when none could be read
	Command string // that process's command line, sanitized; "" when unknown
	Detail  string // for people, as PidfileAlive's detail
}

// ReadPidfile is PidfileAlive with the pid and the command line it found,
// for a status view: it only reads, as PidfileAlive does.
func ReadPidfile(path string) (PidfileState, error) {
	r, err := readPidfile(path)
	return PidfileState{Alive: r.alive, Pid: r.pid, Command: r.cmd, Detail: r.detail}, err
}

// pidfileResult is what PidfileAlive found.
type pidfileResult struct {
	alive  bool
	pid    int    // 0 when no valid pid was read
	cmd    string // sanitized command line, "" when unknown
	detail string
}

func (r pidfileResult) who() string { return legacyWho(r.pid, r.cmd) }

// readPidfile is PidfileAlive: the file's pid, then the process.
func readPidfile(path string) (pidfileResult, error) {
	var r pidfileResult
	if path == "" {
		return r, errors.New("legacy pidfile: empty path")
	}
	content, mtime, err := readSmallLegacy(path)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			r.detail = fmt.Sprintf("no pidfile %s", path)
			return r, nil
		case errors.Is(err, safeopen.ErrTooLarge):
			r.detail = fmt.Sprintf("pidfile %s is longer than %d bytes: not a pidfile", path, pidfileMax)
			return r, nil
		}
		return r, err
	}
	pid, why := parsePid(content)
	if why != "" {
		r.detail = fmt.Sprintf("pidfile %s %s", path, why)
		return r, nil
	}
	r.pid = pid
	if pid == os.Getpid() {
		r.detail = fmt.Sprintf("pid %d from %s is this process", pid, path)
		return r, nil
	}
	return r.judgeProcess(path, mtime)
}

// judgeProcess decides whether r.pid, read from the pidfile at path last
// modified at mtime, is the live process that wrote it.
func (r pidfileResult) judgeProcess(path string, mtime time.Time) (pidfileResult, error) {
	pid := r.pid
	switch err := unix.Kill(pid, 0); err {
	case nil, unix.EPERM:
		// It exists (EPERM: another user's process).
	case unix.ESRCH:
		r.detail = fmt.Sprintf("pid %d from %s is not running", pid, path)
		return r, nil
	default:
		return r, fmt.Errorf("pidfile %s: checking pid %d: %w", path, pid, err)
	}
	st, err := runner.ReadProcStat(pid)
	if err == nil && st.Pid != pid {
		err = fmt.Errorf("it is for pid %d", st.Pid)
	}
	if err != nil {
		if unix.Kill(pid, 0) == unix.ESRCH {
			r.detail = fmt.Sprintf("pid %d from %s is not running", pid, path)
			return r, nil
		}
		r.alive = true
		r.detail = fmt.Sprintf("%s from %s (its /proc/%d/stat cannot be used, so it was not checked for a zombie or a reused pid: %v)",
			r.who(), path, pid, legacyErrText(err))
		return r, nil
	}
	r.cmd = legacyCommand(pid, st.Comm)
	if st.State == 'Z' || st.State == 'X' || st.State == 'x' {
		r.detail = fmt.Sprintf("%s from %s has exited (a zombie its parent has not reaped yet)", r.who(), path)
		return r, nil
	}
	return r.judgeStart(path, mtime, st.StartTicks), nil
}

// judgeStart applies the reused-PID rule (recycled) to a live process
// that started startTicks after boot.
func (r pidfileResult) judgeStart(path string, mtime time.Time, startTicks uint64) pidfileResult {
	boot, err := legacyBootTime()
	if err != nil {
		r.alive = true
		r.detail = fmt.Sprintf("%s from %s (boot time unknown, so it was not checked for a reused pid: %v)", r.who(), path, legacyErrText(err))
		return r
	}
	started := runner.StartTime(boot, startTicks)
	if recycled(started, mtime) {
		other := ""
		if r.cmd != "" {
			other = " (" + r.cmd + ")"
		}
		r.detail = fmt.Sprintf("pid %d from %s is now another process%s, started %s after the pidfile was written",
			r.pid, path, other, started.Sub(mtime).Round(time.Second))
		return r
	}
	r.alive = true
	r.detail = fmt.Sprintf("%s from %s", r.who(), path)
	return r
}

// readSmallLegacy reads the regular file at path (following symlinks) through
// safeopen.ReadFile — stat before the open, so that a FIFO or a device is
// never opened; O_NONBLOCK; fstat after — and returns its content and
// mtime. A file over pidfileMax bytes gives safeopen.ErrTooLarge.
func readSmallLegacy(path string) ([]byte, time.Time, error) {
	data, st, err := safeopen.ReadFile(path, pidfileMax, true)
	if err != nil {
		var fe *safeopen.FileError
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, time.Time{}, unix.ENOENT
		case errors.As(err, &fe):
			return nil, time.Time{}, fmt.Errorf("pidfile %w", fe)
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, time.Time{}, fmt.Errorf("pidfile %s: %w", path, err)
	}
	return data, time.Unix(st.Mtim.Unix()), nil
}

// parsePid parses a pidfile's content: decimal digits, with ASCII white
// space around them (a trailing newline). why says, without quoting the
// content, why it is not a valid pid.
func parsePid(b []byte) (pid int, why string) {
	if len(b) > pidfileMax {
		return 0, fmt.Sprintf("is longer than %d bytes: not a pidfile", pidfileMax)
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
	case err != nil || n > pidMax:
		if neg {
			return 0, "holds a negative number, not a pid"
		}
		if err != nil {
			return 0, "holds a number too large to be a pid"
		}
		return 0, fmt.Sprintf("names %d, above the largest pid %d", n, pidMax)
	case neg && n != 0:
		return 0, fmt.Sprintf("names -%d, not a valid pid", n)
	case n == 0:
		return 0, "names pid 0, not a valid pid"
	}
	return int(n), ""
}

// recycled is the reused-PID rule: the process that now has the pidfile's
// PID is another one than the pidfile's writer when its start, computed as
// boot + starttime, is more than recycleSlack after the pidfile's mtime.
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
func recycled(started, written time.Time) bool {
	return started.After(written.Add(recycleSlack))
}

// legacyBootTime gives the boot time used by the reused-PID rule. It is a
// variable so that a test can give it any fraction of a second (the one
// /proc/stat cuts off), see recycled.
var legacyBootTime = runner.BootTime

// legacyCommand gives pid's command line for a message, or its comm when that
// cannot be read.
func legacyCommand(pid int, comm string) string {
	if c := lockfile.ProcessCommand(pid); c != "" {
		return c
	}
	return comm
}

// legacyErrText drops the path from a *PathError, which the message gives
// already.
func legacyErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
