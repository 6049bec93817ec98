//go:build linux

// Package statefile opens cron-gate's state dir (OpenDir, dir.go) and
// writes the small state files in it so that nothing is lost and nothing
// is left behind:
//   - Write replaces a file atomically: the new content is written to an
//     unnamed file in the same directory (O_TMPFILE), fsynced, given a
//     temporary name (linkat through /proc/self/fd) and renamed over the
//     old one (renameat), and the directory is fsynced, so a reader sees
//     the old or the new content, never a mix, and a crash keeps one of
//     them. Where O_TMPFILE or /proc is missing, a named temporary file
//     (O_CREAT|O_EXCL) is used instead;
//   - every call goes through the directory's descriptor (safeopen.Dir),
//     never a path: a directory swapped after it was opened changes
//     nothing;
//   - temporary files never accumulate: one is named only between two
//     system calls (linkat, renameat) unless the fallback is in use, and a
//     process killed with SIGKILL in that window leaves
//     ".NAME.tmp-PID-RANDOM" behind, which the next Write of the same
//     file removes once its writer is dead (kill(PID, 0)) or the file is
//     older than StaleAfter (a PID of another PID namespace);
//   - Update re-reads the file under a short exclusive flock and writes the
//     merged result, so concurrent writers never overwrite each other;
//   - the lock files are the state dir's owner's alone (0600, checked at
//     every open), and a wait for one is bounded (Locked).
package statefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/lockfile"
)

// StaleAfter is the age past which a temporary file is removed even when
// its writer seems alive (its PID may be another process by now, or of
// another PID namespace). A write holds its named temp for microseconds.
const StaleAfter = 10 * time.Minute

// Options say how Write writes.
type Options struct {
	Perm os.FileMode // the file's mode, exactly (not masked by the umask)
	// NoSync skips both fsyncs: readers still see the old or the new
	// content, never a mix, but after a crash the file may be the old
	// one, or empty. Only for caches rebuilt from a durable source.
	NoSync bool
	// AnyTarget: remove stale temporary files of every target in the
	// directory, not only of name. For a private directory whose files
	// are all written here and whose names change (the config cache).
	AnyTarget bool
}

const tmpInfix = ".tmp-"

// Write atomically replaces name in d with data, as the package doc says.
func Write(d *safeopen.Dir, name string, data []byte, o Options) error {
	RemoveStaleTemps(d, name, o.AnyTarget)
	err := writeTmpfile(d, name, data, o)
	if errors.Is(err, errNoTmpfile) {
		err = writeNamed(d, name, data, o)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", d.Join(name), err)
	}
	if o.NoSync {
		return nil
	}
	return d.Sync()
}

var errNoTmpfile = errors.New("O_TMPFILE unavailable")

// tempName is name's temporary name: ".NAME.tmp-PID-RANDOM".
func tempName(name string) string {
	return "." + name + tmpInfix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64()>>16, 36)
}

// writeTmpfile writes data to an O_TMPFILE file and renames it over name.
func writeTmpfile(d *safeopen.Dir, name string, data []byte, o Options) error {
	fd, err := safeopen.IgnoringEINTRFd(func() (int, error) {
		return unix.Openat(d.Fd(), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(o.Perm.Perm()))
	})
	switch err {
	case nil:
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL, unix.ENOENT:
		return errNoTmpfile // file system or kernel without O_TMPFILE
	default:
		return err
	}
	defer unix.Close(fd)
	if err := fill(fd, data, o); err != nil {
		return err
	}
	// AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH; the /proc link does not.
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	for try := 0; ; try++ {
		tmp := tempName(name)
		err := safeopen.IgnoringEINTR(func() error { return unix.Linkat(unix.AT_FDCWD, proc, d.Fd(), tmp, unix.AT_SYMLINK_FOLLOW) })
		switch {
		case err == unix.EEXIST && try < 8:
			continue
		case err == unix.ENOENT && try == 0:
			if _, serr := os.Stat("/proc/self/fd"); serr != nil {
				return errNoTmpfile // no /proc
			}
			return err
		case err != nil:
			return err
		}
		if err := d.Rename(tmp, name); err != nil {
			d.Remove(tmp)
			return safeopen.Cause(err)
		}
		return nil
	}
}

// writeNamed is the fallback: a named temporary file, renamed over name.
func writeNamed(d *safeopen.Dir, name string, data []byte, o Options) error {
	var tmp string
	var fd int
	var err error
	for try := 0; ; try++ {
		tmp = tempName(name)
		fd, err = safeopen.IgnoringEINTRFd(func() (int, error) {
			return unix.Openat(d.Fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(o.Perm.Perm()))
		})
		if err != unix.EEXIST || try >= 8 {
			break
		}
	}
	if err != nil {
		return err
	}
	err = fill(fd, data, o)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = safeopen.Cause(d.Rename(tmp, name))
	}
	if err != nil {
		d.Remove(tmp)
	}
	return err
}

// fill sets the mode, writes data and fsyncs unless told not to.
func fill(fd int, data []byte, o Options) error {
	if err := safeopen.IgnoringEINTR(func() error { return unix.Fchmod(fd, uint32(o.Perm.Perm())) }); err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	if o.NoSync {
		return nil
	}
	if err := safeopen.IgnoringEINTR(func() error { return unix.Fsync(fd) }); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// RemoveStaleTemps removes the temporary files of name in d (of every
// target when anyTarget) left by writers killed between naming and
// renaming them: those whose writer's PID is gone, or older than
// StaleAfter whoever wrote them (older releases named them ".NAME.tmp-N"
// with a random N). A live writer's recent temp is kept. Errors are
// ignored: this is housekeeping, and a directory that cannot be listed
// cannot be written either.
func RemoveStaleTemps(d *safeopen.Dir, name string, anyTarget bool) {
	names, err := d.Names()
	if err != nil {
		return
	}
	prefix := "." + name + tmpInfix
	now := time.Now()
	for _, n := range names {
		var rest string
		if anyTarget {
			i := strings.LastIndex(n, tmpInfix)
			if n[0] != '.' || i < 0 {
				continue
			}
			rest = n[i+len(tmpInfix):]
		} else {
			var ok bool
			if rest, ok = strings.CutPrefix(n, prefix); !ok {
				continue
			}
		}
		st, err := d.Stat(n)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		old := now.Sub(time.Unix(st.Mtim.Unix())) > StaleAfter
		if old || writerGone(rest) {
			d.Remove(n)
		}
	}
}

// writerGone reports whether the temp suffix "PID-RANDOM" names a writer
// that no longer exists. Another suffix (an older release's) says nothing.
func writerGone(suffix string) bool {
	p, _, ok := strings.Cut(suffix, "-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}

// LockWait is how long Locked waits for a state lock before it gives up
// with an error naming the lock and its holder: the locks are held for
// one read and one write by processes of the state dir's owner, so a
// longer wait means one of them is stuck.
const LockWait = 10 * time.Second

// Locked runs fn while holding an exclusive flock on the lock file name in
// d: opened with lockfile's OpenPrivate (created 0600 if missing, one of
// ours opened to others is tightened, another user's refused: nobody else
// can hold it; never deleted), and waited for at most wait (LockWait if 0)
// or until ctx is done, then a *lockfile.WaitError. Meant for short
// critical sections. A TERM, INT or HUP received during the wait after a
// command ended ends the process with 128+N (runner.Waiting).
func Locked(ctx context.Context, d *safeopen.Dir, name string, wait time.Duration, fn func() error) error {
	if wait <= 0 {
		wait = LockWait
	}
	// Armed from before the open: whoever sees the lock file open here
	// (a test, a person with ls /proc/PID/fd) sees a wait that a signal
	// ends.
	done := runner.Waiting()
	l, err := lockfile.In(d).OpenPrivate(name)
	if err != nil {
		done()
		return err
	}
	defer l.Close()
	err = l.LockWithin(ctx, wait)
	done()
	if err != nil {
		return err
	}
	return fn()
}

// Update re-reads name in d under the lock lockName (Locked, with wait),
// passes its content (nil if it does not exist) to fn and atomically
// writes what fn returns. If fn returns nil data and nil error, nothing is
// written. A file that is not a regular file or is larger than max is an
// error (safeopen's).
func Update(ctx context.Context, d *safeopen.Dir, lockName, name string, max int64, wait time.Duration, o Options, fn func(old []byte) ([]byte, error)) error {
	return Locked(ctx, d, lockName, wait, func() error {
		old, err := d.ReadFile(name, max)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			var fe *safeopen.FileError
			if errors.As(err, &fe) {
				return err
			}
			return fmt.Errorf("read %s: %w", d.Join(name), safeopen.Cause(err))
		}
		data, err := fn(old)
		if err != nil || data == nil {
			return err
		}
		return Write(d, name, data, o)
	})
}
