//go:build linux

package lockfile

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ProbeShared tells whether another open file description, normally another
// process (an old worker), holds an exclusive flock on the existing file at
// path. It never creates, truncates or writes the file and never holds a
// lock after it returns.
//
// A missing file (or a missing parent directory) is not held: false, nil.
// A symlink as the last path component is refused with an error wrapping
// ErrUnsafe and is not followed (symlinks in the directories above it are
// followed); so is anything that is not a regular file (checked with lstat
// before the open, so that device nodes are not opened, and again with
// fstat on the descriptor). The file is opened O_RDONLY|O_NOFOLLOW|O_CLOEXEC|
// O_NOCTTY and also O_NONBLOCK, so that a FIFO swapped in after the lstat
// cannot make the open hang waiting for a writer; O_NONBLOCK changes nothing
// for a regular file or for flock. Reading the file is never needed: a
// flock can be taken through a read-only descriptor. A file this process may
// not read gives an error (EACCES), not an answer.
//
// The probe takes LOCK_SH|LOCK_NB. EWOULDBLOCK means an exclusive lock is
// held (shared locks never conflict with each other): held is true and
// holders lists, best-effort from /proc/locks, the exclusive holders (may be
// empty; for messages only, it can be stale by the time it is read). On
// success the shared lock is dropped at once with LOCK_UN, before the close:
// close alone would keep it held while a child forked at that moment by
// another goroutine still shares the descriptor (O_CLOEXEC closes it only at
// exec).
//
// Any number of probes, in this process or others, can run at the same
// moment without disturbing each other. Honest caveat: while a probe holds
// its shared lock, between its LOCK_SH and its LOCK_UN, an exclusive flock
// attempt on the file conflicts with it. A blocking LOCK_EX (what a worker
// that waits for its turn does) only waits those few microseconds; but a
// non-blocking LOCK_EX|LOCK_NB (a worker that quits when "another instance
// is running") fails if it lands exactly in that window. Nothing runs between
// the two flock calls (no allocation, no other syscall), so the window is the
// length of two flock syscalls, a few microseconds, unless the kernel
// deschedules the thread in between. An old worker that starts at that very
// instant may therefore think it is already running and exit; the next run
// of it is not affected. This cannot be avoided with flock: any probe that
// could succeed must take a lock for an instant.
//
// A lock held through another open of the file by this same process counts
// as held too: flocks conflict between open file descriptions, not
// processes.
func ProbeShared(path string) (held bool, holders []Holder, err error) {
	if path == "" {
		return false, nil, errors.New("legacy lock: empty path")
	}
	var lst unix.Stat_t
	for {
		err = unix.Lstat(path, &lst)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if err == unix.ENOENT {
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("legacy lock %s: %w", path, err)
	}
	if err := probeCheckType(path, lst.Mode); err != nil {
		return false, nil, err
	}

	var fd int
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		switch err {
		case unix.ENOENT:
			// Removed since the lstat: nobody can hold it any more.
			return false, nil, nil
		case unix.ELOOP:
			return false, nil, fmt.Errorf("legacy lock %s is a symlink; it will not be followed: %w", path, ErrUnsafe)
		}
		return false, nil, fmt.Errorf("legacy lock %s: cannot open it to probe it: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return false, nil, fmt.Errorf("legacy lock %s: %w", path, err)
	}
	if err := probeCheckType(path, st.Mode); err != nil {
		unix.Close(fd)
		return false, nil, err
	}

	// The critical section: keep it to the two flock syscalls.
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		for {
			err = unix.Flock(fd, unix.LOCK_UN)
			if err != unix.EINTR {
				break
			}
		}
		// Close releases the lock anyway should LOCK_UN have failed.
		unix.Close(fd)
		if err != nil {
			return false, nil, fmt.Errorf("legacy lock %s: unlock after probe: %w", path, err)
		}
		return false, nil, nil
	}
	unix.Close(fd)
	if err != unix.EWOULDBLOCK {
		return false, nil, fmt.Errorf("legacy lock %s: flock: %w", path, err)
	}

	all, _ := Holders(uint64(st.Dev), st.Ino)
	for _, h := range all {
		// Only an exclusive lock makes LOCK_SH fail. A shared entry is
		// another prober that came after the exclusive holder left.
		if !h.Shared {
			holders = append(holders, h)
		}
	}
	return true, holders, nil
}

func probeCheckType(path string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return fmt.Errorf("legacy lock %s is a symlink; it will not be followed: %w", path, ErrUnsafe)
	}
	return fmt.Errorf("legacy lock %s is not a regular file: %w", path, ErrUnsafe)
}
