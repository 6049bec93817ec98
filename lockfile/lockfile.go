// Package lockfile opens lock files safely and takes flock(2) locks on them.
//
// It is the one place that touches lock files, for path locks, slot pools
// and legacy-lock probes alike. Guarantees:
//   - a lock directory is opened with O_NOFOLLOW|O_DIRECTORY and refused if
//     it is a symlink, not a directory, owned by another user (root aside),
//     or writable by others without the sticky bit;
//   - a lock file is opened relative to that directory's descriptor with
//     O_NOFOLLOW, created with mode 0664 (before umask, as the Python workers
//     do), and refused if it is a symlink, not a regular file, or has more
//     than one link;
//   - lock files are never deleted or truncated: an empty file is only a
//     meeting place, and deleting it would let two processes "hold" the lock
//     on different inodes;
//   - a busy lock is a result (ErrBusy), not a failure.
//
// A flock belongs to the open file description: it is released when every
// descriptor that shares it is closed. Descriptors are close-on-exec unless
// handed to a child on purpose (runner.Spec.ExtraFiles).
package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// FileMode is the mode lock files are created with, before the umask.
const FileMode = 0o664

// DirMode is the mode a missing lock directory is created with, before the
// umask.
const DirMode = 0o775

// ErrBusy is wrapped by *BusyError: another process holds the lock.
var ErrBusy = errors.New("busy")

// ErrUnsafe is wrapped by errors for lock dirs and files refused for safety
// (symlinks, foreign owners, hard links).
var ErrUnsafe = errors.New("unsafe")

// Dir is an open, validated lock directory.
type Dir struct {
	Path string
	fd   int
}

// OpenDir opens the lock directory at path, creating it (and its parents)
// with DirMode if create is set and it does not exist.
func OpenDir(path string, create bool) (*Dir, error) {
	if path == "" {
		return nil, errors.New("lock dir: empty path")
	}
	if err := CheckAncestors(path); err != nil {
		return nil, fmt.Errorf("lock dir %s: %w", path, err)
	}
	fd, err := openDir(path)
	if errors.Is(err, unix.ENOENT) && create {
		if mkErr := os.MkdirAll(path, DirMode); mkErr != nil && !errors.Is(mkErr, fs.ErrExist) {
			return nil, fmt.Errorf("lock dir %s: cannot create: %w", path, unwrapPath(mkErr))
		}
		fd, err = openDir(path)
	}
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("lock dir %s is a symlink; refusing to follow it: %w", path, ErrUnsafe)
		case errors.Is(err, unix.ENOTDIR):
			// O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR,
			// not ELOOP: tell the two apart.
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, fmt.Errorf("lock dir %s is a symlink; refusing to follow it: %w", path, ErrUnsafe)
			}
			return nil, fmt.Errorf("lock dir %s is not a directory", path)
		}
		return nil, fmt.Errorf("lock dir %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock dir %s: %w", path, err)
	}
	if err := checkDir(path, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Dir{Path: path, fd: fd}, nil
}

// CheckAncestors refuses a path whose existing ancestors another user could
// change under us, as OpenSSH's StrictModes does: every existing directory
// above path, after resolving symlinks, must be owned by root or by this
// user, and a symlink on the way must itself be owned by root or by this
// user. Otherwise whoever owns that ancestor could swap a component for a
// symlink and make us create directories and lock files elsewhere. Parts
// that do not exist yet are created by us, under an ancestor that passed.
func CheckAncestors(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	uid := uint32(os.Geteuid())
	trusted := func(owner uint32) bool { return owner == 0 || owner == uid }
	// The longest existing prefix, checking symlinks as written.
	existing := "/"
	for _, comp := range strings.Split(strings.TrimPrefix(filepath.Dir(abs), "/"), "/") {
		if comp == "" {
			continue
		}
		next := filepath.Join(existing, comp)
		var st unix.Stat_t
		if unix.Lstat(next, &st) != nil {
			break
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && !trusted(st.Uid) {
			return fmt.Errorf("%s is a symlink owned by uid %d; refusing to follow it: %w", next, st.Uid, ErrUnsafe)
		}
		existing = next
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return nil // gone meanwhile: the open that follows reports it
	}
	for p := real; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && !trusted(st.Uid) {
			return fmt.Errorf("its ancestor %s is owned by uid %d, who could redirect it; use a directory owned by root or by you: %w", p, st.Uid, ErrUnsafe)
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

func openDir(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

func checkDir(path string, st *unix.Stat_t) error {
	uid := uint32(os.Geteuid())
	if st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("lock dir %s is owned by uid %d, not by you (uid %d) or root; another user could replace its lock files: %w", path, st.Uid, uid, ErrUnsafe)
	}
	if st.Mode&unix.S_IWOTH != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("lock dir %s is writable by everyone without the sticky bit (chmod o-w or +t): %w", path, ErrUnsafe)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Reserve grows this process's descriptor table to hold n more files at
// once. The kernel doubles the table as files are opened, and in a
// multi-threaded process (every Go program) each doubling waits for an RCU
// grace period, about 10 ms here: six of them for 10,000 locks. Growing it
// once up front costs one wait. It changes nothing else; errors are ignored
// (the opens that follow report any real shortage).
func (d *Dir) Reserve(n int) {
	if n < 64 {
		return
	}
	if fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, n+64); err == nil {
		unix.Close(fd)
	}
}

// Close releases the directory descriptor. Locks taken through it stay.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Lock is an open lock file. While Locked, this process (and any child that
// inherited File) holds the flock.
type Lock struct {
	Path string // lock file path, for messages
	f    *os.File
	Dev  uint64
	Ino  uint64
}

// File returns the descriptor, e.g. for handing to a child.
func (l *Lock) File() *os.File { return l.f }

// Close releases the lock (if no other descriptor shares it) and the file.
// It never deletes the lock file.
func (l *Lock) Close() error { return l.f.Close() }

// Open opens (creating if needed) the lock file name inside d without
// locking it.
func (d *Dir) Open(name string) (*Lock, error) {
	p := filepath.Join(d.Path, name)
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, FileMode)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("lock file %s is a symlink; refusing to follow it (it was not made by withlock): %w", p, ErrUnsafe)
		}
		return nil, fmt.Errorf("lock file %s: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock file %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("lock file %s is not a regular file: %w", p, ErrUnsafe)
	}
	if st.Nlink > 1 {
		unix.Close(fd)
		return nil, fmt.Errorf("lock file %s has %d hard links; refusing a file that may be someone else's: %w", p, st.Nlink, ErrUnsafe)
	}
	return &Lock{Path: p, f: os.NewFile(uintptr(fd), p), Dev: st.Dev, Ino: st.Ino}, nil
}

// TryLock takes an exclusive flock without blocking. It returns false, nil
// when another open file description holds a conflicting lock.
func (l *Lock) TryLock() (bool, error) {
	return flock(l.f, unix.LOCK_EX|unix.LOCK_NB, l.Path)
}

// TryShared takes a shared flock without blocking: it succeeds alongside
// other shared holders and fails only against an exclusive holder.
func (l *Lock) TryShared() (bool, error) {
	return flock(l.f, unix.LOCK_SH|unix.LOCK_NB, l.Path)
}

// Lock takes an exclusive flock, blocking until it is free. Use it only for
// short critical sections (state files), never around a command.
func (l *Lock) Lock() error {
	_, err := flock(l.f, unix.LOCK_EX, l.Path)
	return err
}

// Unlock drops the flock but keeps the file open.
func (l *Lock) Unlock() error {
	_, err := flock(l.f, unix.LOCK_UN, l.Path)
	return err
}

func flock(f *os.File, how int, path string) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch err {
		case nil:
			return true, nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
			return false, nil
		}
		return false, fmt.Errorf("flock %s: %w", path, err)
	}
}

// BusyError says which lock was busy and, where /proc/locks tells, who holds
// it.
type BusyError struct {
	What     string // the path or pool the caller asked for
	LockPath string
	Dev, Ino uint64
	Holders  []Holder // filled by FindHolders
}

func (e *BusyError) Error() string {
	s := fmt.Sprintf("%s is busy (lock %s", e.What, e.LockPath)
	for i, h := range e.Holders {
		if i == 0 {
			s += " held by "
		} else {
			s += ", "
		}
		s += h.String()
	}
	return s + ")"
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// Busy builds a BusyError for l. It is cheap: holders are looked up only
// by FindHolders, when the error is about to be shown.
func Busy(what string, l *Lock) *BusyError {
	return &BusyError{What: what, LockPath: l.Path, Dev: l.Dev, Ino: l.Ino}
}

// FindHolders fills Holders from /proc/locks. The answer can be stale by the
// time it is read: it is for messages only.
func (e *BusyError) FindHolders() {
	e.Holders, _ = Holders(e.Dev, e.Ino)
}
