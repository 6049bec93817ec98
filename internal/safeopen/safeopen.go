//go:build linux

// Package safeopen opens the directories and files that another local user
// may be able to tamper with — lock dirs, slot-file dirs, the state dir
// and the config cache (any of which may sit in world-writable /tmp or
// /var/tmp), and files named on the command line or in the config — so
// that a symlink planted or flipped at any moment cannot redirect a create
// or a write, and a FIFO, a device or an endless file cannot hang or
// exhaust a call. It is Linux-only (O_PATH, /proc/self/fd).
//
// Directories (OpenDir). Guarantees:
//   - a path is walked one component at a time from a directory
//     descriptor — "/" for an absolute path, the working directory
//     (opened once) for a relative one — each component opened with
//     openat(O_PATH|O_NOFOLLOW) and judged by fstat on the descriptor it
//     gave, never by its name: what was checked is what is used, and no
//     name is looked up twice. Files are then opened relative to the final
//     directory's descriptor, so a component swapped after the walk
//     changes nothing for this process;
//   - under TrustOwner (the default), every directory on the way — the
//     working directory's own ancestors too, for a relative path — must be
//     owned by root or by the caller (effective uid), and one writable by
//     everyone must have the sticky bit, as OpenSSH's StrictModes has it;
//     a symlink on the way is followed only when it too is owned by root
//     or the caller: it is read with readlinkat on the link's own
//     descriptor and its target walked the same way, from "/" or from the
//     link's directory; at most MaxLinks links per walk. Anything else is
//     refused with an error wrapping ErrUnsafe, before anything is created
//     below it;
//   - missing components are created only when asked, with mkdirat and an
//     explicit mode (before the umask), and then opened and judged like
//     any other: a directory someone else created first (EEXIST) is
//     judged as theirs;
//   - NoFollowLast refuses a symlink as the last component whoever owns
//     it; Private requires the directory itself to be the caller's and
//     closed to group and others.
//
// Files. Guarantees:
//   - a file inside a Dir is opened with openat on the directory's
//     descriptor with O_NOFOLLOW|O_NONBLOCK|O_NOCTTY|O_CLOEXEC and
//     refused unless fstat says it is a regular file; a FIFO therefore
//     never blocks the open, and a symlink, a directory, a socket or a
//     device is refused (*FileError wrapping ErrNotRegular) at once;
//   - a file outside (ReadFile, OpenStream: pidfiles, the token file,
//     --paths-from) is checked with stat before it is opened, so that a
//     device is never opened (opening some has side effects), then opened
//     the same way and checked again with fstat;
//   - reads are bounded: ReadFile refuses a file larger than its limit
//     (*FileError wrapping ErrTooLarge) without reading past limit+1
//     bytes, whatever fstat said.
//
// Not guaranteed: TrustAny (read-only views of another user's state)
// follows every symlink and accepts any owner — it still never blocks and
// never writes. A user who can write a directory can always delete or
// replace the files in it; these rules only make sure that such a user
// cannot make this process create or write anything outside it.
package safeopen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafe is wrapped by every refusal made for safety: a directory or
// symlink another user controls, a symlink where none may be.
var ErrUnsafe = errors.New("unsafe")

// ErrNotRegular is wrapped (by *FileError) when a file is a FIFO, a
// device, a socket, a directory or a symlink where a regular file must be.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped (by *FileError) when a file is larger than the
// caller's limit.
var ErrTooLarge = errors.New("too large")

// MaxLinks bounds the symlinks one walk follows (the kernel's MAXSYMLINKS).
const MaxLinks = 40

// Trust says which directories and symlinks a walk accepts.
type Trust int

const (
	// TrustOwner accepts only directories and symlinks owned by root or
	// the caller, and world-writable directories only with the sticky
	// bit. For every directory this process creates or writes in.
	TrustOwner Trust = iota
	// TrustAny accepts any owner and follows any symlink (still within
	// MaxLinks): for read-only views, e.g. a status read by another user.
	TrustAny
)

// DirOptions say how OpenDir walks a path.
type DirOptions struct {
	What         string // what the directory is, for messages ("lock dir")
	Trust        Trust
	Create       bool   // create missing directories
	Mode         uint32 // their mode, before the umask
	NoFollowLast bool   // refuse a symlink as the last component, whoever owns it
	Private      bool   // the directory itself: owned by the caller, no group or other bits
}

// Dir is an open directory, reached by a walk that passed its options.
// Its descriptor is an O_PATH one: it names the directory for the *at
// calls and fstat; Sync and Names open it for reading when they need to.
type Dir struct {
	Path string // as given, for messages; never used to reach the directory
	fd   int
}

// Fd returns the directory's descriptor (O_PATH), for *at calls. It stays
// valid until Close.
func (d *Dir) Fd() int { return d.fd }

// Close releases the descriptor.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Dup returns a second handle on the same directory (a new descriptor of
// it, which Close releases on its own): the directory as it was reached,
// not walked again.
func (d *Dir) Dup() (*Dir, error) {
	fd, err := IgnoringEINTRFd(func() (int, error) { return unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Path, err)
	}
	return &Dir{Path: d.Path, fd: fd}, nil
}

// Join names a file of d for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.Path, name) }

// ProcPath is a name of the directory that the kernel resolves through
// this process's descriptor (/proc/self/fd/N), for interfaces that take
// only names (inotify). It is valid while d is open and /proc is mounted.
func (d *Dir) ProcPath() string { return "/proc/self/fd/" + strconv.Itoa(d.fd) }

// pathError is an error whose text is exactly msg and that wraps err.
type pathError struct {
	msg string
	err error
}

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return e.err }

func errorf(err error, format string, args ...any) error {
	return &pathError{msg: fmt.Sprintf(format, args...), err: err}
}

// OpenDir walks path as the package doc says and returns the directory.
// Errors name path and o.What, and wrap ErrUnsafe for refusals, the errno
// otherwise (so errors.Is(err, fs.ErrNotExist) holds for a missing
// component when o.Create is not set).
func OpenDir(path string, o DirOptions) (*Dir, error) {
	w := &walker{o: o, path: path, uid: uint32(os.Geteuid())}
	if path == "" {
		return nil, fmt.Errorf("%s: empty path", o.what())
	}
	if strings.IndexByte(path, 0) >= 0 {
		return nil, fmt.Errorf("%s %q: a path cannot hold a NUL byte", o.what(), path)
	}
	abs := path[0] == '/'
	start, shown := ".", "."
	if abs {
		start, shown = "/", "/"
	}
	fd, err := IgnoringEINTRFd(func() (int, error) { return unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, w.errorf(err, "%s %s: cannot open %s: %v", o.what(), path, start, err)
	}
	if err := w.checkFd(fd, shown, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if !abs && o.Trust == TrustOwner {
		if err := w.checkUpward(fd); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	fd, err = w.walk(fd, shown, path)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, fd: fd}, nil
}

// OpenDir walks sub from d (which is not closed) as the package OpenDir
// does from "/". d's own ancestors are not checked again.
func (d *Dir) OpenDir(sub string, o DirOptions) (*Dir, error) {
	path := filepath.Join(d.Path, sub)
	w := &walker{o: o, path: path, uid: uint32(os.Geteuid())}
	if sub == "" || strings.IndexByte(sub, 0) >= 0 || sub[0] == '/' {
		return nil, fmt.Errorf("%s %q: not a relative path", o.what(), path)
	}
	fd, err := IgnoringEINTRFd(func() (int, error) { return unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0) })
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.what(), path, err)
	}
	fd, err = w.walk(fd, d.Path, sub)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: path, fd: fd}, nil
}

func (o DirOptions) what() string {
	if o.What == "" {
		return "directory"
	}
	return o.What
}

type walker struct {
	o     DirOptions
	path  string // the path asked for, for messages
	uid   uint32
	links int
}

func (w *walker) errorf(err error, format string, args ...any) error {
	return errorf(err, format, args...)
}

// walk resolves rel from the directory cur (which it owns: it is closed or
// returned) and returns the final directory's descriptor.
func (w *walker) walk(cur int, shown, rel string) (int, error) {
	comps := split(rel)
	if len(comps) == 0 {
		// "/" or ".": the start is the directory asked for.
		if err := w.checkFd(cur, shown, true); err != nil {
			unix.Close(cur)
			return -1, err
		}
		return cur, nil
	}
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		last := len(comps) == 0
		if c == ".." {
			up, err := IgnoringEINTRFd(func() (int, error) {
				return unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			})
			if err != nil {
				unix.Close(cur)
				return -1, w.errorf(err, "%s %s: %s/..: %v", w.o.what(), w.path, shown, err)
			}
			unix.Close(cur)
			cur, shown = up, filepath.Dir(shown)
			if err := w.checkFd(cur, shown, last); err != nil {
				unix.Close(cur)
				return -1, err
			}
			continue
		}
		next := filepath.Join(shown, c)
		fd, st, err := w.component(cur, c, next)
		if err != nil {
			unix.Close(cur)
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			unix.Close(cur)
			cur, shown = fd, next
			if err := w.check(&st, shown, last); err != nil {
				unix.Close(cur)
				return -1, err
			}
		case unix.S_IFLNK:
			target, err := w.follow(fd, &st, next, last)
			unix.Close(fd)
			if err != nil {
				unix.Close(cur)
				return -1, err
			}
			comps = append(split(target), comps...)
			if target[0] == '/' {
				root, err := IgnoringEINTRFd(func() (int, error) { return unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) })
				unix.Close(cur)
				if err != nil {
					return -1, w.errorf(err, "%s %s: cannot open /: %v", w.o.what(), w.path, err)
				}
				cur, shown = root, "/"
				if err := w.checkFd(cur, shown, len(comps) == 0); err != nil {
					unix.Close(cur)
					return -1, err
				}
			} else if len(comps) == 0 {
				// A link to "." or "x/..": the link's directory is
				// the one asked for.
				if err := w.checkFd(cur, shown, true); err != nil {
					unix.Close(cur)
					return -1, err
				}
			}
		default:
			unix.Close(fd)
			unix.Close(cur)
			if last {
				return -1, w.errorf(unix.ENOTDIR, "%s %s is not a directory", w.o.what(), w.path)
			}
			return -1, w.errorf(unix.ENOTDIR, "%s %s: %s is not a directory", w.o.what(), w.path, next)
		}
	}
	return cur, nil
}

// component opens one name in cur without following it, creating a
// directory there first if it is missing and the walk may create.
func (w *walker) component(cur int, name, shown string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	open := func() (int, error) {
		return IgnoringEINTRFd(func() (int, error) {
			return unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
	}
	fd, err := open()
	if err == unix.ENOENT && w.o.Create {
		mkErr := IgnoringEINTR(func() error { return unix.Mkdirat(cur, name, w.o.Mode) })
		if mkErr != nil && mkErr != unix.EEXIST {
			return -1, st, w.errorf(mkErr, "%s %s: cannot create %s: %v", w.o.what(), w.path, shown, mkErr)
		}
		// Ours or, after EEXIST, someone else's: judged below either way.
		fd, err = open()
	}
	if err != nil {
		if err == unix.ENOENT && shown != w.path {
			return -1, st, w.errorf(err, "%s %s: %s does not exist", w.o.what(), w.path, shown)
		}
		return -1, st, w.errorf(err, "%s %s: %v", w.o.what(), w.path, err)
	}
	if err := IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, st, w.errorf(err, "%s %s: %s: %v", w.o.what(), w.path, shown, err)
	}
	return fd, st, nil
}

// follow judges the symlink open at fd and returns its target.
func (w *walker) follow(fd int, st *unix.Stat_t, shown string, last bool) (string, error) {
	if last && w.o.NoFollowLast {
		return "", w.errorf(ErrUnsafe, "%s %s is a symlink; refusing to follow it", w.o.what(), w.path)
	}
	if w.o.Trust == TrustOwner && !w.trusted(st.Uid) {
		return "", w.errorf(ErrUnsafe, "%s %s: %s is a symlink owned by uid %d; refusing to follow it (use a path whose symlinks are owned by root or by you)",
			w.o.what(), w.path, shown, st.Uid)
	}
	w.links++
	if w.links > MaxLinks {
		return "", w.errorf(unix.ELOOP, "%s %s: more than %d symlinks on the way", w.o.what(), w.path, MaxLinks)
	}
	buf := make([]byte, 256)
	for {
		// The link's own descriptor: the target read is the target of
		// the link judged above, whatever the name points at now.
		n, err := unix.Readlinkat(fd, "", buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", w.errorf(err, "%s %s: %s: %v", w.o.what(), w.path, shown, err)
		}
		if n < len(buf) {
			if n == 0 {
				return "", w.errorf(unix.ENOENT, "%s %s: %s is an empty symlink", w.o.what(), w.path, shown)
			}
			return string(buf[:n]), nil
		}
		if len(buf) >= unix.PathMax {
			return "", w.errorf(unix.ENAMETOOLONG, "%s %s: %s: target too long", w.o.what(), w.path, shown)
		}
		buf = make([]byte, 2*len(buf))
	}
}

func (w *walker) trusted(uid uint32) bool { return uid == 0 || uid == w.uid }

func (w *walker) checkFd(fd int, shown string, final bool) error {
	var st unix.Stat_t
	if err := IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return w.errorf(err, "%s %s: %s: %v", w.o.what(), w.path, shown, err)
	}
	return w.check(&st, shown, final)
}

// check judges one directory of the walk; final is the one asked for.
func (w *walker) check(st *unix.Stat_t, shown string, final bool) error {
	if w.o.Trust == TrustAny {
		return nil
	}
	what, path := w.o.what(), w.path
	if final && w.o.Private {
		if st.Uid != w.uid {
			return w.errorf(ErrUnsafe, "%s %s is owned by uid %d, not by you (uid %d); a private directory must be yours", what, path, st.Uid, w.uid)
		}
		if st.Mode&0o077 != 0 {
			return w.errorf(ErrUnsafe, "%s %s has mode %04o; a private directory must be closed to group and others (chmod 700)", what, path, st.Mode&0o7777)
		}
		return nil
	}
	if !w.trusted(st.Uid) {
		if final {
			return w.errorf(ErrUnsafe, "%s %s is owned by uid %d, not by you (uid %d) or root; another user could replace its files", what, path, st.Uid, w.uid)
		}
		return w.errorf(ErrUnsafe, "%s %s: its ancestor %s is owned by uid %d, who could redirect it; use a directory owned by root or by you", what, path, shown, st.Uid)
	}
	if st.Mode&unix.S_IWOTH != 0 && st.Mode&unix.S_ISVTX == 0 {
		if final {
			return w.errorf(ErrUnsafe, "%s %s is writable by everyone without the sticky bit (chmod o-w or +t)", what, path)
		}
		return w.errorf(ErrUnsafe, "%s %s: its ancestor %s is writable by everyone without the sticky bit, so anyone could redirect it", what, path, shown)
	}
	return nil
}

// checkUpward checks the ancestors of the working directory (open at fd)
// up to the root: a relative path is only as safe as they are.
func (w *walker) checkUpward(fd int) error {
	var st unix.Stat_t
	if err := IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return w.errorf(err, "%s %s: working directory: %v", w.o.what(), w.path, err)
	}
	cur := fd
	defer func() {
		if cur != fd {
			unix.Close(cur)
		}
	}()
	for level := 1; level < 4096; level++ {
		up, err := IgnoringEINTRFd(func() (int, error) {
			return unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return w.errorf(err, "%s %s: an ancestor of the working directory: %v", w.o.what(), w.path, err)
		}
		var ust unix.Stat_t
		if err := IgnoringEINTR(func() error { return unix.Fstat(up, &ust) }); err != nil {
			unix.Close(up)
			return w.errorf(err, "%s %s: an ancestor of the working directory: %v", w.o.what(), w.path, err)
		}
		if ust.Dev == st.Dev && ust.Ino == st.Ino {
			unix.Close(up)
			return nil // the root is its own parent
		}
		if cur != fd {
			unix.Close(cur)
		}
		cur, st = up, ust
		if err := w.check(&st, cwdAncestor(level), false); err != nil {
			return err
		}
	}
	return w.errorf(unix.ELOOP, "%s %s: the working directory is too deep", w.o.what(), w.path)
}

// cwdAncestor names the working directory's ancestor level levels up, for
// messages only.
func cwdAncestor(level int) string {
	if wd, err := os.Getwd(); err == nil {
		for i := 0; i < level; i++ {
			wd = filepath.Dir(wd)
		}
		return wd
	}
	return strings.TrimSuffix(strings.Repeat("../", level), "/")
}

// split cuts a path into its components, without empty ones and ".".
func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// IgnoringEINTR calls fn until it fails with something other than EINTR
// (a signal arriving during a blocking system call; Go installs its
// handlers with SA_RESTART, but not every call is restarted) and returns
// that.
func IgnoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// IgnoringEINTRFd is IgnoringEINTR for a call that returns a descriptor.
func IgnoringEINTRFd(fn func() (int, error)) (int, error) {
	for {
		fd, err := fn()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// Stat returns what name in d is, without following a symlink.
func (d *Dir) Stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := IgnoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return st, &fs.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	return st, nil
}

// Rename renames old to new, both in d (renameat).
func (d *Dir) Rename(old, new string) error {
	if err := IgnoringEINTR(func() error { return unix.Renameat(d.fd, old, d.fd, new) }); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(old), New: d.Join(new), Err: err}
	}
	return nil
}

// Remove removes the file name from d (unlinkat). It never removes a
// directory.
func (d *Dir) Remove(name string) error {
	if err := IgnoringEINTR(func() error { return unix.Unlinkat(d.fd, name, 0) }); err != nil {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// readable opens d itself for reading (getdents, fsync need a real
// descriptor); the caller closes it.
func (d *Dir) readable() (int, error) {
	return IgnoringEINTRFd(func() (int, error) {
		return unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// Sync fsyncs the directory, so that a rename or create in it is durable.
func (d *Dir) Sync() error {
	fd, err := d.readable()
	if err != nil {
		return &fs.PathError{Op: "fsync", Path: d.Path, Err: err}
	}
	defer unix.Close(fd)
	if err := IgnoringEINTR(func() error { return unix.Fsync(fd) }); err != nil && err != unix.EINVAL {
		return &fs.PathError{Op: "fsync", Path: d.Path, Err: err}
	}
	return nil
}

// Names lists the names in d, in directory order.
func (d *Dir) Names() ([]string, error) {
	fd, err := d.readable()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path)
	defer f.Close()
	return f.Readdirnames(-1)
}
