//go:build linux

package gate

// Legacy probes: the legacy locks and pidfiles of cron-gate's gates:
// the old, pre-cron-gate workers either flock a lock file or write a
// pidfile, and a gate with legacy_locks / legacy_pidfiles skips its run
// while one of them says an old process is still running. Both are only
// looked at, never written, created, truncated or removed.
//
// CheckLegacy's answer is typed (LegacyFound: which kind, which file, who), so the
// run path records the skip's reason from the kind, not from the text.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crongate/crongate/lockfile"
)

// LegacyKind says what kind of legacy file says an old process is running.
type LegacyKind int

// Kinds of LegacyFound.
const (
	LegacyLockFile    LegacyKind = iota + 1 // a legacy lock file someone holds a flock on
	LegacyPidfileFile                       // a pidfile naming a live process
)

// LegacyFound is a legacy lock or pidfile that says an old process is still
// running.
type LegacyFound struct {
	Kind LegacyKind
	Path string // the lock file or pidfile, as configured
	// Holders are the processes that hold a LegacyLockFile, as far as /proc/locks
	// tells; none when it cannot tell.
	Holders []lockfile.Holder
	Pid     int    // Pidfile: the live process it names
	Command string // Pidfile: that process's command line, "" when unknown
}

// String is the reason for people, one of
//
//	legacy lock /tmp/dependency-classifier.lock is held by pid 99 (python3 old.py)
//	legacy lock /tmp/dependency-classifier.lock is held by another process
//	pidfile /tmp/translate-worker.pid names live pid 1234 (python3 translate_worker.py)
//
// The paths come from the config; a command line is neutralised by
// package lockfile.
func (f *LegacyFound) String() string {
	if f.Kind == LegacyPidfileFile {
		return fmt.Sprintf("pidfile %s names live %s", f.Path, legacyWho(f.Pid, f.Command))
	}
	if len(f.Holders) == 0 {
		// /proc/locks unreadable, or the holder is not visible here.
		return fmt.Sprintf("legacy lock %s is held by another process", f.Path)
	}
	s := make([]string, len(f.Holders))
	for i, h := range f.Holders {
		s[i] = h.String()
	}
	return fmt.Sprintf("legacy lock %s is held by %s", f.Path, strings.Join(s, ", "))
}

// Recorded is String for a record another user may read (the gate's
// journal, 0644): the holders' command lines are left out unless /proc
// shows them to every user (lockfile.CommandsShownToAll), so that a
// reader sees no more than their own /proc would show; the pids stay.
// status and why look the command lines up again when they are read, with
// the reader's own rights.
func (f *LegacyFound) Recorded() string {
	if lockfile.CommandsShownToAll() {
		return f.String()
	}
	c := *f
	c.Command = ""
	c.Holders = make([]lockfile.Holder, len(f.Holders))
	for i, h := range f.Holders {
		h.Command = ""
		c.Holders[i] = h
	}
	return c.String()
}

// CheckLegacy returns the first legacy lock or pidfile that says an old process
// is still running, or nil if none. It never modifies either file.
//
// Locks are probed first, in order, with lockfile.ProbeShared (see there for
// the microseconds-long window in which a probe can make an old worker's
// non-blocking exclusive flock fail), then pidfiles, in order, with
// PidfileAlive. A missing lock file or pidfile says nothing is running.
//
// An entry that cannot be checked (a symlinked lock file, a pidfile that
// is a directory, a permission error) does not stop the others from being
// checked: if a later one is held, it is returned with a nil error;
// otherwise the errors of all entries that could not be checked are
// returned, joined.
func CheckLegacy(locks, pidfiles []string) (*LegacyFound, error) {
	var errs []error
	for _, p := range locks {
		held, holders, err := lockfile.ProbeShared(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if held {
			return &LegacyFound{Kind: LegacyLockFile, Path: p, Holders: holders}, nil
		}
	}
	for _, p := range pidfiles {
		r, err := readPidfile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.alive {
			return &LegacyFound{Kind: LegacyPidfileFile, Path: p, Pid: r.pid, Command: r.cmd}, nil
		}
	}
	return nil, errors.Join(errs...)
}

// legacyWho gives "pid 1234 (python3 worker.py)".
func legacyWho(pid int, cmd string) string {
	if cmd == "" {
		return fmt.Sprintf("pid %d", pid)
	}
	return fmt.Sprintf("pid %d (%s)", pid, cmd)
}
