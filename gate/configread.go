//go:build linux

package gate

// Reading the config file: without blocking on a special file, bounded in
// size, and never a version that is still being written.
//
// An editor that saves in place (nano, vim with backupcopy=yes, `cat >`,
// sed -i is not one: it renames) truncates the file and writes it again,
// possibly in several writes and with pauses between them. A reader that
// lands in between sees a prefix of the file, which may well parse: a gate
// whose `paused = true` line is not written yet would run. Every write
// sets the file's ctime to the current time (and, unlike mtime, ctime
// cannot be set back), so the rule is: a version of the file is used only
// once it has been quiet for configSettle — its ctime at least that old —
// and did not change while it was read (a second fstat). The common case
// (a file not changed in the last second) costs one fstat more than a
// plain read; a run that comes within a second of a save waits until the
// second is over, and a file that keeps changing for configSettleMax is
// an error, so a run does not happen on it (exit 125).
//
// What this does not catch: a writer that stops for longer than
// configSettle in the middle of a save. The docs ask for atomic
// replacement (write a new file, rename it over the old one) or `cron-gate
// edit`, which never expose a partial file.
//
// cron-gate's own edits (gateconf: resume, cron-gate edit) replace the
// file atomically and, under the config's edit lock, record the version
// they wrote; the next edit, holding the same lock, may take exactly that
// version at once (ReadConfigVersion's trusted), so back-to-back edits do
// not wait for each other's second.
//
// An editor that renames the old file away and then writes a new one (vim
// with backupcopy=no) leaves a moment without any file: a missing config
// whose directory changed within configSettle is looked up once more after
// configSettlePause before it counts as missing.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// The settling rule's constants; variables, with the clock, only so that
// the tests can drive the rule deterministically.
var (
	// configSettle: a file whose ctime is this recent may still be being
	// written.
	configSettle = time.Second
	// configSettlePause: the shortest wait before the next look.
	configSettlePause = 50 * time.Millisecond
	// configSettleMax: a file still changing after this is an error.
	configSettleMax = 5 * time.Second

	configNow   = time.Now
	configSleep = time.Sleep
)

// FileVersion identifies one version of a file: any write changes Size,
// Mtime or Ctime, a chmod or chown changes Ctime, and a replacement
// (rename over it) changes Ino. Times are nanoseconds since the epoch.
type FileVersion struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64
	Mode         uint32 // st_mode: the type and permission bits
	Uid, Gid     uint32
}

// VersionOf is the FileVersion of a file as st (fstat's or lstat's)
// describes it.
func VersionOf(st *unix.Stat_t) FileVersion { return versionOf(st) }

func versionOf(st *unix.Stat_t) FileVersion {
	return FileVersion{
		Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: int64(st.Size),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
		Mode: uint32(st.Mode), Uid: st.Uid, Gid: st.Gid,
	}
}

// recent reports whether the file changed within configSettle of now (or
// in the future by as much: a clock set back must not hide a write).
func (v FileVersion) recent(now time.Time) bool {
	d := now.Sub(time.Unix(0, v.Ctime))
	return d < configSettle && d > -configSettle
}

// ReadConfig reads the config file's bytes; nil, nil for a missing file
// when missingOK.
//
// Guarantees: it never blocks on a special file (the file is opened with
// O_NONBLOCK and must be a regular file, else an error); it reads at most
// MaxConfigBytes (a larger file is an error); and it returns only a
// version of the file that was not being written (see the comment at the
// top of this file: a file changed within the last second is read once it
// has been quiet for a second, waiting at most a few seconds, after which
// it is an error). A final symlink is followed. Errors are single lines starting
// with "config PATH" that say what to do.
func ReadConfig(path string, missingOK bool) ([]byte, error) {
	data, _, err := readConfigStable(path, missingOK, 0, FileVersion{})
	return data, err
}

// ReadConfigVersion is ReadConfig for an editor of the file (gateconf): a
// missing file is an error, a symlink is refused (resolve it first), and
// the version read is returned, to be checked with ConfigUnchanged before
// the file is replaced. A file whose version is trusted (not the zero
// FileVersion: the one the previous edit under the same lock wrote, see
// WrittenVersion) is taken at once, however recent.
func ReadConfigVersion(path string, trusted FileVersion) ([]byte, FileVersion, error) {
	return readConfigStable(path, false, unix.O_NOFOLLOW, trusted)
}

// WrittenVersion returns the version of the file at path (not followed if
// a symlink) that an editor just renamed into place, given the version of
// the new file before the rename: the rename changes only its ctime, so
// any other difference means somebody changed it since, and ok is false.
func WrittenVersion(path string, before FileVersion) (v FileVersion, ok bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return FileVersion{}, false
	}
	v = versionOf(&st)
	after := v
	after.Ctime = before.Ctime
	return v, after == before
}

// ConfigUnchanged reports whether the file at path (not followed if a
// symlink) still holds exactly data, as the version v that
// ReadConfigVersion returned: same bytes, inode, size, times, mode and
// owner. It reads the file once, without waiting; any error reads as
// changed.
func ConfigUnchanged(path string, data []byte, v FileVersion) bool {
	r, err := readConfigOnce(path, unix.O_NOFOLLOW)
	return err == nil && !r.torn && r.v == v && bytes.Equal(r.data, data)
}

// configRead is one read of the file.
type configRead struct {
	data    []byte
	v       FileVersion
	torn    bool // its stat changed during the read
	missing bool // it does not exist
}

func readConfigStable(path string, missingOK bool, flags int, trusted FileVersion) ([]byte, FileVersion, error) {
	where := safetext.Where(path, 0)
	deadline := configNow().Add(configSettleMax)
	var prev *configRead
	for {
		r, err := readConfigOnce(path, flags)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, FileVersion{}, configOpenError(where, err, flags)
		}
		if err != nil {
			r = &configRead{missing: true}
		}
		now := configNow()
		settled := false
		switch {
		case r.missing:
			// Missing twice in a row, or in a directory that has not
			// changed lately: missing.
			settled = prev != nil && prev.missing || !dirChangedRecently(path)
		case r.torn:
		case trusted != FileVersion{} && r.v == trusted:
			settled = true
		default:
			settled = !r.v.recent(now)
		}
		if settled && r.missing {
			return nil, FileVersion{}, configMissing(where, path, missingOK)
		}
		if settled {
			return r.data, r.v, nil
		}
		if now.After(deadline) {
			return nil, FileVersion{}, fmt.Errorf("%s: kept changing for %s while cron-gate read it; replace it atomically (write a new file and rename it over the old one) or edit it with cron-gate edit",
				where, configSettleMax)
		}
		prev = r
		configSleep(settleWait(r, now))
	}
}

// settleWait is how long to wait before looking at the file again: until
// the version just read has been quiet for configSettle (a write meanwhile
// makes the next look wait again), at least configSettlePause.
func settleWait(r *configRead, now time.Time) time.Duration {
	wait := configSettlePause
	if !r.missing && !r.torn {
		if w := time.Unix(0, r.v.Ctime).Add(configSettle).Sub(now); w > wait {
			wait = min(w, configSettle)
		}
	}
	return wait
}

// dirChangedRecently reports whether the directory of path had an entry
// added, removed or renamed within configSettle.
func dirChangedRecently(path string) bool {
	var st unix.Stat_t
	if unix.Stat(filepath.Dir(path), &st) != nil {
		return false
	}
	return versionOf(&st).recent(configNow())
}

// readConfigOnce opens path without blocking (a FIFO or device must not
// hang the caller), checks that it is a regular file, and reads at most
// MaxConfigBytes+1 bytes. Its errors are the system's (unix.Errno, which
// errors.Is matches with fs.ErrNotExist and fs.ErrPermission) or
// *configKindError.
func readConfigOnce(path string, flags int) (*configRead, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC|flags, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &configStepError{"stat", err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &configKindError{st.Mode & unix.S_IFMT}
	}
	r := &configRead{v: versionOf(&st)}
	size := int64(512)
	if st.Size > 0 && st.Size < MaxConfigBytes {
		size = st.Size + 1 // +1: to see the end without growing
	}
	buf := make([]byte, 0, size)
	for len(buf) <= MaxConfigBytes {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):min(cap(buf), MaxConfigBytes+1)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &configStepError{"read", err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	if len(buf) > MaxConfigBytes {
		return nil, &configStepError{"size", nil}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &configStepError{"stat", err}
	}
	r.data, r.torn = buf, versionOf(&st) != r.v
	return r, nil
}

// configKindError: the path is not a regular file.
type configKindError struct{ kind uint32 }

func (e *configKindError) Error() string { return safeopen.Kind(e.kind) }

// configStepError: a step after the open failed.
type configStepError struct {
	step string
	err  error
}

func (e *configStepError) Error() string { return e.step + ": " + e.err.Error() }

func configOpenError(where string, err error, flags int) error {
	var kind *configKindError
	var step *configStepError
	switch {
	case errors.As(err, &kind):
		return fmt.Errorf("%s: is not a regular file but %s; point to the TOML config file", where, kind)
	case errors.As(err, &step) && step.step == "size":
		return fmt.Errorf("%s: is larger than %d bytes; is this the right file?", where, MaxConfigBytes)
	case errors.As(err, &step):
		return fmt.Errorf("%s: cannot %s: %s", where, step.step, safetext.Line(step.err.Error()))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied; run as a user who can read it, or fix its permissions", where)
	case err == unix.ELOOP && flags&unix.O_NOFOLLOW != 0:
		return fmt.Errorf("%s: became a symlink while cron-gate read it; try again", where)
	}
	return fmt.Errorf("%s: cannot open: %s", where, safetext.Line(err.Error()))
}

func configMissing(where, path string, missingOK bool) error {
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		n, _ := unix.Readlink(path, buf)
		return fmt.Errorf("%s: is a symlink to %s, which does not exist; fix or remove the symlink",
			where, safetext.QuotePath(string(buf[:max(n, 0)])))
	}
	if missingOK {
		return nil
	}
	return &MissingConfigError{Where: where, Path: path}
}

// MissingConfigError is the error of a config file named explicitly
// (--config, $CRON_GATE_CONFIG) that does not exist. It is an error, not
// an empty config: a mistyped or moved path must not drop the pauses the
// right file holds (a config that cannot be read never lets a paused job
// run). ConfigHint says how to fix it.
type MissingConfigError struct {
	Where string // "config PATH", as every config error starts
	Path  string
}

func (e *MissingConfigError) Error() string {
	return e.Where + ": file does not exist; check the path or create the file"
}

// ConfigHint is the hint line for a config error err, "" if it has none:
// for a config named explicitly that does not exist, what names it
// ($CRON_GATE_CONFIG or --config) and the two ways out, neither of which is
// cron-gate status (it reads the same config, and fails alike).
func ConfigHint(err error) string {
	var m *MissingConfigError
	if !errors.As(err, &m) {
		return ""
	}
	by, unset := "--config", "leave out --config"
	if v, ok := os.LookupEnv("CRON_GATE_CONFIG"); ok && v == m.Path {
		by, unset = "$CRON_GATE_CONFIG", "unset CRON_GATE_CONFIG"
	}
	return fmt.Sprintf("%s names this file: create it (an empty file is a valid config: a gate needs no declaration), or %s to use %s (a missing default is an empty config)",
		by, unset, DefaultConfigPath)
}
