//go:build linux

package safeopen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// FileError is a file refused for what it is: not a regular file
// (wrapping ErrNotRegular), or larger than allowed (wrapping ErrTooLarge).
// Its text is one line naming the file: "/x/pauses.json is a FIFO, not a
// regular file", "/x/check.json is larger than 16 MiB".
type FileError struct {
	Path string
	Kind string // what it is instead, "a FIFO"; "" when too large
	Max  int64  // the limit, when too large
	Err  error  // ErrNotRegular, ErrTooLarge or ErrNotOwn
}

func (e *FileError) Error() string {
	switch e.Err {
	case ErrTooLarge:
		return fmt.Sprintf("%s is larger than %s", e.Path, Size(e.Max))
	case ErrNotOwn:
		return fmt.Sprintf("%s is %v", e.Path, ErrNotOwn)
	}
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

func (e *FileError) Unwrap() error { return e.Err }

// Size writes a byte count for messages: "16 MiB", "4096 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Kind names the file type of mode (its S_IFMT bits) for messages: "a
// FIFO", "a directory", "a regular file", ...
func Kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFREG:
		return "a regular file"
	}
	return "not a regular file"
}

func notRegular(path string, mode uint32) error {
	return &FileError{Path: path, Kind: Kind(mode), Err: ErrNotRegular}
}

// openFlags are added to every open of a file.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// openIn opens name in d as the package doc says and checks it is a
// regular file. The descriptor is left non-blocking (harmless for a
// regular file).
func (d *Dir) openIn(name string, flag int, perm uint32) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	shown := d.Join(name)
	fd, err := IgnoringEINTRFd(func() (int, error) { return unix.Openat(d.fd, name, flag|openFlags, perm) })
	if err != nil {
		switch err {
		case unix.ELOOP, unix.ENXIO, unix.EISDIR, unix.ENODEV, unix.ETXTBSY:
			// A symlink (O_NOFOLLOW), a socket, a directory opened
			// for writing, a device without a driver: say which.
			if IgnoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }) == nil &&
				st.Mode&unix.S_IFMT != unix.S_IFREG {
				return -1, st, notRegular(shown, st.Mode)
			}
		}
		return -1, st, &fs.PathError{Op: "open", Path: shown, Err: err}
	}
	if err := IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "fstat", Path: shown, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, st, notRegular(shown, st.Mode)
	}
	return fd, st, nil
}

// ReadFile reads the regular file name in d: at most max bytes, else a
// *FileError wrapping ErrTooLarge. A missing file gives an error for which
// errors.Is(err, fs.ErrNotExist) holds.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	fd, st, err := d.openIn(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return readBounded(fd, st.Size, max, d.Join(name))
}

// ReadOwnFile is ReadFile for a file that only this process's user may
// have written: it must be owned by the effective user, have one link,
// and be closed to writing by group and others, else a *FileError
// wrapping ErrNotOwn (a file planted while the directory was open to
// others, or linked in from elsewhere).
func (d *Dir) ReadOwnFile(name string, max int64) ([]byte, error) {
	fd, st, err := d.openIn(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 || st.Mode&0o022 != 0 {
		return nil, &FileError{Path: d.Join(name), Err: ErrNotOwn}
	}
	return readBounded(fd, st.Size, max, d.Join(name))
}

// ErrNotOwn: a file ReadOwnFile refuses.
var ErrNotOwn = errors.New("not this user's own file (owner, links or mode)")

// OpenFile opens the regular file name in d with flag (O_RDONLY,
// O_WRONLY|O_APPEND|O_CREAT, ...) and perm, as the package doc says. The
// returned file is in blocking mode.
func (d *Dir) OpenFile(name string, flag int, perm uint32) (*os.File, error) {
	fd, _, err := d.openIn(name, flag, perm)
	if err != nil {
		return nil, err
	}
	// Back to blocking mode, so that os.NewFile does not try to put a
	// regular file in the poller (F_SETFL sets only O_APPEND and
	// O_NONBLOCK among the flags used here).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&unix.O_APPEND); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: d.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// ReadFile reads the regular file at path, which is not inside a Dir (a
// pidfile, a token file): it is checked with stat (lstat unless follow)
// before it is opened, so that no device or FIFO is ever opened, opened
// with O_NONBLOCK|O_NOCTTY|O_CLOEXEC (and O_NOFOLLOW unless follow),
// checked again with fstat, and read up to max bytes (else a *FileError
// wrapping ErrTooLarge). It returns the fstat of what was read.
func ReadFile(path string, max int64, follow bool) ([]byte, unix.Stat_t, error) {
	fd, st, err := openOutside(path, follow, false)
	if err != nil {
		return nil, st, err
	}
	defer unix.Close(fd)
	data, err := readBounded(fd, st.Size, max, path)
	return data, st, err
}

// OpenStream opens the file at path for reading as a stream (withlock's
// --paths-from): a regular file, or a FIFO or pipe (a shell's
// `<(command)`, /dev/stdin), following symlinks; anything else (a device,
// a socket, a directory) is refused without being opened. A named FIFO
// that no writer has opened yet is waited for, as cat(1) waits: OpenStream
// returns once a writer has written to it or has come and gone (then it
// reads as empty). The wait holds no thread (the runtime's poller), so a
// signal handler that exits ends it. A pipe whose writers are gone reads
// to its end at once. The caller bounds what it reads.
func OpenStream(path string) (*os.File, error) {
	fd, st, err := openOutside(path, true, true)
	if err != nil {
		return nil, err
	}
	// A FIFO stays non-blocking: os.NewFile puts it in the poller, so a
	// read waits for data without holding a thread, and ends at EOF once
	// no writer is left.
	f := os.NewFile(uintptr(fd), path)
	if st.Mode&unix.S_IFMT == unix.S_IFIFO {
		if err := awaitWriter(f); err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "wait for a writer", Path: path, Err: err}
		}
	}
	return f, nil
}

// awaitWriter waits, in the poller, until the FIFO f has data or has had a
// writer that is gone. A read of a non-blocking FIFO that no writer has
// opened yet says end of file at once; poll(2) does not: it reports
// neither POLLIN nor POLLHUP on a reader opened before any writer (Linux
// suppresses the hang-up until it has seen one), while a pipe whose
// writers have closed reports POLLHUP.
func awaitWriter(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		if err == unix.EINTR {
			return false
		}
		perr = err
		return err != nil || n > 0
	})
	if err != nil {
		return err
	}
	return perr
}

func openOutside(path string, follow, fifo bool) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	ok := func(mode uint32) bool {
		t := mode & unix.S_IFMT
		return t == unix.S_IFREG || fifo && t == unix.S_IFIFO
	}
	stat := func() error { return unix.Stat(path, &st) }
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if !follow {
		stat = func() error { return unix.Lstat(path, &st) }
		flags |= unix.O_NOFOLLOW
	}
	if err := IgnoringEINTR(stat); err != nil {
		return -1, st, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if !ok(st.Mode) {
		return -1, st, notRegular(path, st.Mode)
	}
	fd, err := IgnoringEINTRFd(func() (int, error) { return unix.Open(path, flags, 0) })
	if err != nil {
		if err == unix.ELOOP && !follow {
			return -1, st, notRegular(path, unix.S_IFLNK)
		}
		return -1, st, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, st, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if !ok(st.Mode) {
		unix.Close(fd)
		return -1, st, notRegular(path, st.Mode)
	}
	return fd, st, nil
}

// readBounded reads fd to its end, refusing more than max bytes; size is
// fstat's, a hint (the file may grow or shrink meanwhile).
func readBounded(fd int, size, limit int64, shown string) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	if size > limit {
		return nil, &FileError{Path: shown, Max: limit, Err: ErrTooLarge}
	}
	buf := make([]byte, 0, min(limit+1, max(size+1, 512)))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, &FileError{Path: shown, Max: limit, Err: ErrTooLarge}
			}
			grown := make([]byte, len(buf), min(limit+1, int64(2*cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: shown, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &FileError{Path: shown, Max: limit, Err: ErrTooLarge}
		}
	}
}
