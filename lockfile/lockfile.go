//go:build linux

// Package lockfile opens lock files safely and takes flock(2) locks on them.
//
// It is the one place that touches lock files, for path locks, slot pools
// and legacy-lock probes alike. Guarantees:
//   - a lock directory is reached by internal/safeopen's walk: component by
//     component from a directory descriptor, each judged by fstat on its
//     own descriptor and never looked up again by name, so a symlink
//     planted or flipped on the way at any moment cannot redirect it; it
//     and every directory above it must be owned by root or by the caller,
//     one writable by everyone must have the sticky bit, a symlink above it
//     is followed only when owned by root or the caller, and the lock
//     directory itself may not be a symlink at all. Missing directories
//     are created (mkdirat, DirMode before the umask) only after
//     everything above them passed, and then judged like any other. Any
//     refusal wraps ErrUnsafe;
//   - a lock file is opened relative to that directory's descriptor with
//     O_NOFOLLOW, created with mode 0664 (before umask, as the Python workers
//     do), and refused if it is a symlink, not a regular file, or has more
//     than one link;
//   - a state dir's lock files (OpenPrivate) are created PrivateMode and,
//     at every open, must be the caller's and closed to group and others:
//     a looser one of ours is tightened (fchmod), another user's refused;
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
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
)

// FileMode is the mode lock files are created with, before the umask.
const FileMode = 0o664

// DirMode is the mode a missing lock directory is created with, before the
// umask.
const DirMode = 0o775

// ErrBusy is wrapped by *BusyError: another process holds the lock.
var ErrBusy = errors.New("busy")

// ErrUnsafe is wrapped by errors for lock dirs and files refused for safety
// (symlinks, foreign owners, hard links). It is safeopen.ErrUnsafe, so
// refusals of state and cache dirs match it too.
var ErrUnsafe = safeopen.ErrUnsafe

// Dir is an open, validated lock directory.
type Dir struct {
	Path string
	d    *safeopen.Dir
	own  bool // Close closes d
}

// OpenDir opens the lock directory at path as the package doc says,
// creating it (and its missing parents) with DirMode if create is set.
func OpenDir(path string, create bool) (*Dir, error) {
	d, err := safeopen.OpenDir(path, safeopen.DirOptions{What: "lock dir", Create: create, Mode: DirMode, NoFollowLast: true})
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, d: d, own: true}, nil
}

// In returns the lock files of a directory already opened with safeopen
// (a state dir). Closing the result leaves d open.
func In(d *safeopen.Dir) *Dir { return &Dir{Path: d.Path, d: d} }

// Sub opens the directory name inside d (creating it with DirMode if
// create is set) from d's descriptor, without resolving d's path again and
// without following a symlink at name. If d has been removed, Sub fails
// with an error that wraps fs.ErrNotExist, even with create.
func (d *Dir) Sub(name, what string, create bool) (*safeopen.Dir, error) {
	return d.d.OpenDir(name, safeopen.DirOptions{What: what, Create: create, Mode: DirMode, NoFollowLast: true})
}

// SubShared opens the directory name inside d as Sub does, but accepts
// any owner: for a directory that every user of a shared lock dir writes
// (withlock's waiting queue), which the first of them creates. Created in
// a lock dir that everyone may write (mode 1777), it gets that mode too,
// so that the others can write it as well; a symlink at name is still
// refused.
func (d *Dir) SubShared(name, what string, create bool) (*safeopen.Dir, error) {
	sub, err := d.d.OpenDir(name, safeopen.DirOptions{What: what, Create: create, Mode: DirMode, NoFollowLast: true, Trust: safeopen.TrustAny})
	if err != nil || !create {
		return sub, err
	}
	var parent, st unix.Stat_t
	const shared = unix.S_IWOTH | unix.S_ISVTX
	if unix.Fstat(d.d.Fd(), &parent) == nil && parent.Mode&shared == shared &&
		unix.Fstat(sub.Fd(), &st) == nil && st.Uid == uint32(os.Geteuid()) && st.Mode&shared != shared {
		// Through the descriptor (/proc/self/fd/N names the very
		// directory opened), never the name, which another user could
		// have replaced meanwhile.
		unix.Chmod(sub.ProcPath(), 0o1777)
	}
	return sub, nil
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
	if fd, err := unix.FcntlInt(uintptr(d.d.Fd()), unix.F_DUPFD_CLOEXEC, n+64); err == nil {
		unix.Close(fd)
	}
}

// Close releases the directory descriptor (unless it came from In). Locks
// taken through it stay.
func (d *Dir) Close() error {
	if !d.own {
		return nil
	}
	return d.d.Close()
}

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
	return d.open(name, FileMode)
}

// PrivateMode is the mode of the lock files of a state dir (OpenPrivate):
// the owner's only. flock(2) works on a descriptor opened read-only, so a
// lock file others may read is a lock others may hold, and with it stop or
// stall the runs that take it.
const PrivateMode = 0o600

// ErrNotOurs is wrapped (with ErrUnsafe) when OpenPrivate meets a lock file
// another user owns.
var ErrNotOurs = errors.New("owned by another user")

// OpenPrivate opens (creating it PrivateMode if needed) the lock file name
// inside d as Open does, for the short locks and claims of a state dir,
// and makes sure no other user can open it: a file of the caller's
// (effective uid) whose mode lets group or others in (an older release
// created them 0664 before the umask) is tightened to PrivateMode through
// its descriptor (fchmod); another user's is refused with an error that
// wraps ErrUnsafe and ErrNotOurs. The check is made on the descriptor
// opened, after the open: what is checked is what is locked.
func (d *Dir) OpenPrivate(name string) (*Lock, error) {
	l, err := d.open(name, PrivateMode)
	if err != nil {
		return nil, err
	}
	if err := MakePrivate(l.f, l.Path); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// MakePrivate is OpenPrivate's check, on a lock file f already open
// (path is for messages): f must be the caller's, and is made PrivateMode
// if its mode lets group or others in.
func MakePrivate(f *os.File, path string) error {
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := safeopen.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return fmt.Errorf("lock file %s: %w", path, err)
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return fmt.Errorf("lock file %s is owned by uid %d, not by you (uid %d); a state dir is one user's (docs/security.md): %w",
			path, st.Uid, uid, errors.Join(ErrUnsafe, ErrNotOurs))
	}
	if st.Mode&0o077 != 0 {
		if err := safeopen.IgnoringEINTR(func() error { return unix.Fchmod(fd, PrivateMode) }); err != nil {
			return fmt.Errorf("lock file %s has mode %04o and cannot be made %04o: %w", path, st.Mode&0o7777, PrivateMode, err)
		}
	}
	return nil
}

func (d *Dir) open(name string, mode uint32) (*Lock, error) {
	p := d.d.Join(name)
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.d.Fd(), name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY, mode)
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

// WaitError is LockWithin's error when the lock stayed busy for the whole
// wait: it names the lock and, where /proc/locks tells, its holders.
type WaitError struct {
	LockPath string
	Waited   time.Duration
	Holders  []Holder
}

func (e *WaitError) Error() string {
	s := fmt.Sprintf("lock %s still busy after %s", e.LockPath, e.Waited)
	for i, h := range e.Holders {
		if i == 0 {
			s += ", held by "
		} else {
			s += ", "
		}
		s += h.String()
	}
	return s
}

func (e *WaitError) Unwrap() error { return ErrBusy }

// LockWithin takes an exclusive flock, waiting at most wait for it: it
// tries without blocking and retries at growing intervals (1 ms up to
// 50 ms), so the wait ends at its deadline or when ctx is done (ctx's
// error), never hangs in flock(2). After the deadline it returns a
// *WaitError (wrapping ErrBusy) with the holders filled in.
func (l *Lock) LockWithin(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		ok, err := l.TryLock()
		if err != nil || ok {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			e := &WaitError{LockPath: l.Path, Waited: wait}
			e.Holders, _ = Holders(l.Dev, l.Ino)
			return e
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
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
