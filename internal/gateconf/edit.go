//go:build linux

package gateconf

// Editing `paused` in a hand-written config without disturbing it.
//
// The TOML library can decode but not re-encode a file with its comments and
// layout, so SetPaused edits the bytes. It does not guess where things are:
//
//  1. The file is parsed with Parse, which says whether the gate exists and
//     the line of its `paused` key (GateConfig.PausedLine, from the library).
//  2. editScan splits the file into statements (table headers and key =
//     value lines), following strings, multi-line strings, arrays and
//     inline tables across lines, so that a "[gates.x]" inside a string is
//     never taken for a header. It refuses what it does not understand.
//  3. Only the simple forms are edited: the value token of a `paused =
//     true|false` line directly in the gate's own [gates.NAME] table, a new
//     `paused = true` line right after that header, or a new [gates.NAME]
//     table at the end of the file. Anything else is refused with the line
//     and a request to edit by hand.
//  4. The result is parsed again and must equal the original configuration
//     with only that gate's `paused` changed; otherwise nothing is written.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/lockfile"

	"golang.org/x/sys/unix"
)

// SetPaused sets `paused` of the named gate in the config file at path to
// paused, editing the file in place and keeping every other byte of it:
// comments, blank lines, indentation, key order and line endings (LF or
// CRLF) stay as they are.
//
// What it changes:
//   - `paused = true|false` on its own line in the gate's [gates.NAME]
//     table (header written in any TOML way: [gates."NAME"], spaces around
//     the dots, a comment after it): only the true/false token is
//     replaced; indentation and a trailing comment are kept;
//   - a [gates.NAME] table without `paused`: when pausing, the line
//     `paused = true` is inserted right after the header (indented like the
//     table's first key); when resuming there is nothing to do;
//   - a gate without a table: when pausing, a new [gates.NAME] table with
//     `paused = true` is appended at the end of the file; when resuming
//     there is nothing to do.
//
// If the gate's `paused` (or, when one has to be added, the gate itself) is
// written in a form that cannot be edited safely line by line (an inline
// table, dotted keys such as gates.NAME.paused = true or NAME.paused in a
// [gates] table, a `gates = {...}` inline table), or the file is not a valid
// config, SetPaused changes nothing and returns an error naming the file
// and line and asking to edit it by hand. Setting a gate to the state it is
// already in writes nothing.
//
// Safety: the edited text is parsed again before it is written, and must
// give exactly the original configuration except for this gate's `paused`;
// otherwise the file is left untouched and an error returned. The file is
// replaced atomically: a temporary file in the same directory, with the
// original's permission bits (and owner and group, where the process may
// set them), is written and fsynced, renamed over the original, and the
// directory fsynced. Extended attributes and ACLs of the original are not
// carried over. If path is a symlink, the file it resolves to is replaced
// and the symlink is left in place.
//
// Concurrency: concurrent SetPaused calls and `cron-gate edit` sessions
// (BeginEdit), in one process or several, serialise on an exclusive flock
// of lockPath (created if needed, mode 0600, never through a symlink),
// which callers must pass (a file in the state directory; the config's own
// directory, /etc, may not be writable). SetPaused waits for it at most
// editLockWait, then fails saying the config is being edited. The file is
// read under the lock, so no edit is made on a stale copy, and it is read
// as gate.ReadConfigVersion reads it: a file changed within the last
// second is read again until two reads agree, so a half-written file from
// an editor saving in place is not taken for the config. Writers that do
// not take the lock are not excluded, but if the file no longer holds the
// bytes that were read (or its inode, size, times, mode or owner changed)
// just before the new one is renamed over it, the edit is redone on the
// new content (a few times, then an error), which leaves only a tiny
// window, in which an in-place save is lost whole (it goes to the replaced
// file) rather than mixed with the edit.
//
// Errors are single lines that start with "config PATH" (or "lock file
// PATH" for the lock) and say what to do.
func SetPaused(path, name string, paused bool, lockPath string) error {
	where := safetext.Where(path, 0)
	if err := gate.CheckName(name); err != nil {
		return fmt.Errorf("%s: %s", where, err)
	}
	return editUnderLock(path, lockPath, func(lock *configLock) error {
		return setPausedLocked(path, name, paused, lock)
	})
}

// editUnderLock takes the config lock at lockPath (waiting at most
// editLockWait) and runs edit under it, again while it reports that the
// file changed between its read and its rename (errEditRaced), a few
// times, then fails.
func editUnderLock(path, lockPath string, edit func(*configLock) error) error {
	where := safetext.Where(path, 0)
	if lockPath == "" {
		return fmt.Errorf("%s: no lock file given for the edit; pass a path in the state directory", where)
	}
	lock, err := editLock(lockPath, editLockWait)
	if err != nil {
		return err
	}
	defer lock.release()

	const attempts = 5
	for range attempts {
		err := edit(lock)
		if !errors.Is(err, errEditRaced) {
			return err
		}
	}
	return fmt.Errorf("%s: the file kept changing while cron-gate edited it; try again when nobody else is editing it", where)
}

// errEditRaced reports that the config was replaced between reading and
// renaming; the caller starts over.
var errEditRaced = errors.New("config changed during the edit")

func setPausedLocked(path, name string, paused bool, lock *configLock) error {
	where := safetext.Where(path, 0)
	cur, err := readLocked(path, lock)
	if err != nil {
		return err
	}
	target, data, st, cfg := cur.target, cur.data, cur.v, cur.cfg
	if cfg.Gate(name).Paused == paused {
		return nil
	}
	out, err := editPaused(path, data, cfg, name, paused)
	if err != nil {
		return err
	}
	if err := editVerify(path, out, cfg, name, paused); err != nil {
		return err
	}
	return editReplace(where, target, data, out, st, lock)
}

// lockedConfig is the config as an edit under the lock read it.
type lockedConfig struct {
	target string // path with symlinks resolved: the file replaced
	data   []byte
	v      gate.FileVersion
	cfg    *gate.Config
}

// readLocked reads and parses the config at path under lock, for an edit:
// it must exist and be valid.
func readLocked(path string, lock *configLock) (*lockedConfig, error) {
	where := safetext.Where(path, 0)
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: file does not exist; create it (cron-gate only edits an existing config)", where)
		}
		return nil, fmt.Errorf("%s: cannot resolve the path: %s", where, safetext.Line(safeopen.Cause(err).Error()))
	}
	data, st, err := gate.ReadConfigVersion(target, lock.trusted())
	if err != nil {
		return nil, err
	}
	cfg, err := Parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("%s (cron-gate only edits a valid config: fix this by hand first)", err)
	}
	return &lockedConfig{target: target, data: data, v: st, cfg: cfg}, nil
}

// editPaused returns data with gate's paused set (see SetPaused); cfg is
// data parsed, and the gate's current state differs from paused.
func editPaused(path string, data []byte, cfg *gate.Config, name string, paused bool) ([]byte, error) {
	// Long: SetPaused's three edits and each refusal, in the order its comment lists them.
	sc, err := editScan(data)
	if err != nil {
		return nil, fmt.Errorf("%s: cron-gate cannot follow this line well enough to edit the file safely (%s); edit it by hand",
			safetext.Where(path, err.line), err.msg)
	}
	gateKey := []string{"gates", name}
	byHand := func(line int, form string) error {
		return fmt.Errorf("%s: the paused setting of gate %s is written as %s, which cron-gate cannot edit safely; edit it by hand, or write it as paused = true|false in a [%s] table",
			safetext.Where(path, line), name, form, safetext.TOMLKey(gateKey...))
	}

	if g := cfg.Gates[name]; g != nil && g.PausedLine > 0 {
		// Replace the value of the existing key.
		st := sc.stmtAt(g.PausedLine)
		if st == nil || st.kind != stmtKey {
			return nil, byHand(g.PausedLine, "part of a multi-line inline table")
		}
		full := append(slices0(sc.tableOf(st)), st.key...)
		switch {
		case !editKeyEq(full, append(slices0(gateKey), "paused")):
			return nil, byHand(g.PausedLine, "an inline table")
		case len(st.key) != 1:
			return nil, byHand(g.PausedLine, "a dotted key ("+safetext.TOMLKey(st.key...)+")")
		case sc.headerOf(st) == nil || sc.headerOf(st).kind != stmtTable:
			return nil, byHand(g.PausedLine, "part of an array of tables")
		case !st.simpleBool:
			return nil, byHand(g.PausedLine, "a value other than a plain true or false")
		}
		var b bytes.Buffer
		b.Write(data[:st.valStart])
		b.WriteString(strconv.FormatBool(paused))
		b.Write(data[st.valEnd:])
		return b.Bytes(), nil
	}
	if !paused {
		// Not paused by the config and nothing to remove. (SetPaused does
		// not get here: the states are equal.)
		return data, nil
	}

	// Insert "paused = true" after the gate's own header, if it has one.
	var header *editStmt
	for i := range sc.stmts {
		st := &sc.stmts[i]
		if (st.kind == stmtTable || st.kind == stmtArrayTable) && editKeyEq(st.key, gateKey) {
			if st.kind == stmtArrayTable {
				return nil, byHand(st.line, "an array of tables [["+safetext.TOMLKey(gateKey...)+"]]")
			}
			header = st
			break
		}
	}
	if header != nil {
		indent := ""
		eol := header.eol
		if i := header.index + 1; i < len(sc.stmts) && sc.stmts[i].kind == stmtKey {
			indent = sc.stmts[i].indent // indent like the table's first key
		}
		var b bytes.Buffer
		b.Write(data[:header.end])
		if eol == "" { // header on the last line, no final newline
			b.WriteString(sc.eol)
			b.WriteString(indent + "paused = true")
		} else {
			b.WriteString(indent + "paused = true" + eol)
		}
		b.Write(data[header.end:])
		return b.Bytes(), nil
	}

	// No header of its own. If the gate is declared some other way, or
	// "gates" is an inline table, a new [gates.NAME] table would clash.
	for i := range sc.stmts {
		st := &sc.stmts[i]
		if st.kind != stmtKey {
			continue
		}
		full := append(slices0(sc.tableOf(st)), st.key...)
		if len(full) >= 2 && editKeyEq(full[:2], gateKey) {
			form := "an inline table"
			if len(full) > 2 {
				form = "dotted keys (" + safetext.TOMLKey(st.key...) + ")"
			}
			return nil, fmt.Errorf("%s: gate %s is declared as %s, which cron-gate cannot edit safely; add paused = true to it by hand",
				safetext.Where(path, st.line), name, form)
		}
		if len(full) == 1 && full[0] == "gates" {
			return nil, fmt.Errorf("%s: gates is written as an inline table, which cron-gate cannot edit safely; add the gate with paused = true by hand",
				safetext.Where(path, st.line))
		}
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 {
		if data[len(data)-1] != '\n' {
			b.WriteString(sc.eol)
		}
		b.WriteString(sc.eol)
	}
	b.WriteString("[" + safetext.TOMLKey(gateKey...) + "]" + sc.eol)
	b.WriteString("paused = true" + sc.eol)
	return b.Bytes(), nil
}

// slices0 returns a copy of s with room to append, so that appending never
// writes into the scanner's slices.
func slices0(s []string) []string {
	return append(make([]string, 0, len(s)+4), s...)
}

func editKeyEq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// editVerify parses out and checks that it is cfg with only gate's paused
// changed to paused.
func editVerify(path string, out []byte, cfg *gate.Config, name string, paused bool) error {
	got, err := Parse(path, out)
	if err != nil {
		return fmt.Errorf("%s: the edit would make the file invalid (%s); nothing was changed, edit it by hand",
			safetext.Where(path, 0), err)
	}
	if g := got.Gates[name]; g == nil || g.Paused != paused || paused && g.PausedLine == 0 {
		return fmt.Errorf("%s: the edit did not set paused = %t for gate %s; nothing was changed, edit it by hand",
			safetext.Where(path, 0), paused, name)
	}
	want := editNormal(cfg)
	if g := want.Gates[name]; g != nil {
		g.Paused = paused
	} else {
		want.Gates[name] = &gate.GateConfig{Name: name, Paused: paused}
	}
	if !reflect.DeepEqual(editNormal(got), want) {
		return fmt.Errorf("%s: the edit would have changed more than paused of gate %s; nothing was changed, edit it by hand",
			safetext.Where(path, 0), name)
	}
	return nil
}

// editNormal copies c without line numbers (an inserted line moves them).
func editNormal(c *gate.Config) *gate.Config {
	n := *c
	n.Gates = make(map[string]*gate.GateConfig, len(c.Gates))
	for k, g := range c.Gates {
		gc := *g
		gc.PausedLine = 0
		n.Gates[k] = &gc
	}
	return &n
}

// editLockWait bounds SetPaused's wait for the config lock: long enough
// for any number of queued SetPaused calls (each holds it for one edit),
// short enough that a resume does not hang behind a `cron-gate edit` left
// open in an editor.
const editLockWait = time.Minute

// editLockPoll is how often a waiting editLock tries again.
const editLockPoll = 20 * time.Millisecond

// errEditLockBusy: the lock was still held after the wait.
var errEditLockBusy = errors.New("held by another edit of the config")

// editLock takes an exclusive flock on lockPath, creating it (0600) if
// needed, waiting at most wait for another holder to let go. The lock's
// directory (the state dir) is walked from descriptors as every state dir
// is (package safeopen: never through another user's directory or symlink,
// never re-resolved), and the file is opened through that directory's
// descriptor without following a symlink or blocking, and must be a
// regular file. Its release method releases it.
func editLock(lockPath string, wait time.Duration) (*configLock, error) {
	where := "lock file " + safetext.QuotePath(lockPath)
	d, err := safeopen.OpenDir(filepath.Dir(lockPath), safeopen.DirOptions{What: "state dir"})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: its directory does not exist; create the state directory first", where)
		}
		return nil, fmt.Errorf("%s: %s", where, safetext.Line(err.Error()))
	}
	f, err := d.OpenFile(filepath.Base(lockPath), unix.O_CREAT|unix.O_RDWR, 0o600)
	d.Close()
	if err != nil {
		fe, isFile := errors.AsType[*safeopen.FileError](err)
		switch {
		case isFile && errors.Is(err, safeopen.ErrNotRegular):
			return nil, fmt.Errorf("%s: is %s, not a regular file; remove it (cron-gate creates it)", where, fe.Kind)
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("%s: permission denied; run as the user that owns the state directory", where)
		}
		return nil, fmt.Errorf("%s: cannot open: %s", where, safetext.Line(safeopen.Cause(err).Error()))
	}
	// Nobody else may hold it (flock works on a read-only descriptor):
	// ours and 0600, checked on what was opened.
	if err := lockfile.MakePrivate(f, lockPath); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s", safetext.Line(err.Error()))
	}
	fd := int(f.Fd())
	// Polled rather than blocking, so that the wait is bounded: the
	// holder may be a person in an editor.
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == unix.EWOULDBLOCK && time.Now().Before(deadline) {
			time.Sleep(editLockPoll)
			continue
		}
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		f.Close()
		return nil, fmt.Errorf("%s: %w for over %s (cron-gate edit open in an editor?); try again when it is done", where, errEditLockBusy, wait)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: cannot lock: %s", where, safetext.Line(err.Error()))
	}
	return &configLock{f: f}, nil
}

// configLock is the config's edit lock, held. The lock file also keeps the
// version of the config the last edit under it wrote (record), so that the
// next edit may take exactly that version at once (gate.ReadConfigVersion's
// trusted) instead of waiting for the file to be a second old: nobody but
// an edit holding this lock writes the lock file, and any other change to
// the config changes its version.
type configLock struct{ f *os.File }

func (l *configLock) release() { l.f.Close() }

// trusted returns the version the last edit recorded, or the zero version.
func (l *configLock) trusted() gate.FileVersion {
	var v gate.FileVersion
	buf := make([]byte, 512)
	n, _ := l.f.ReadAt(buf, 0)
	if json.Unmarshal(buf[:n], &v) != nil {
		return gate.FileVersion{}
	}
	return v
}

// record keeps v, the version this edit wrote, for the next edit. Losing
// it costs only the next edit's wait.
func (l *configLock) record(v gate.FileVersion) {
	data, err := json.Marshal(v)
	if err == nil && l.f.Truncate(0) == nil {
		l.f.WriteAt(data, 0)
	}
}

// editReplace atomically replaces target, read as orig (version v), with
// data (see SetPaused). It returns errEditRaced if target no longer holds
// exactly orig as version v just before the rename: a writer that does not
// take the lock (an editor saving in place) changed it meanwhile. The
// version it wrote is recorded in lock (configLock.record), unless the
// file changed again right after the rename.
func editReplace(where, target string, orig, data []byte, v gate.FileVersion, lock *configLock) (err error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".cron-gate-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%s: cannot create a file in %s (permission denied); run as a user who can write there", where, safetext.QuotePath(dir))
		}
		return fmt.Errorf("%s: cannot create a temporary file: %s", where, safetext.Line(safeopen.Cause(err).Error()))
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	fail := func(what string, e error) error {
		return fmt.Errorf("%s: cannot %s the temporary file %s: %s; the config was not changed",
			where, what, safetext.QuotePath(tmpName), safetext.Line(safeopen.Cause(e).Error()))
	}
	// Owner first: chown may clear set-id bits, which the chmod restores.
	// Only root (or the owner, for its own groups) may do it; otherwise the
	// new file keeps the editing user's ids.
	if int(v.Uid) != os.Geteuid() || int(v.Gid) != os.Getegid() {
		_ = tmp.Chown(int(v.Uid), int(v.Gid))
	}
	perm := fs.FileMode(v.Mode & 0o777)
	if v.Mode&unix.S_ISUID != 0 {
		perm |= fs.ModeSetuid
	}
	if v.Mode&unix.S_ISGID != 0 {
		perm |= fs.ModeSetgid
	}
	if v.Mode&unix.S_ISVTX != 0 {
		perm |= fs.ModeSticky
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail("chmod", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	var written unix.Stat_t
	if err := unix.Fstat(int(tmp.Fd()), &written); err != nil {
		return fail("stat", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close", err)
	}
	// The last look before the rename: the bytes, not only the stat, so
	// that an in-place save that restored the old size within one clock
	// tick is seen too. What is left is the window between this read and
	// the rename; a save that starts in it writes into the file the rename
	// unlinks, and is lost whole rather than mixed with this edit.
	if !gate.ConfigUnchanged(target, orig, v) {
		return errEditRaced
	}
	if err := os.Rename(tmpName, target); err != nil {
		return fmt.Errorf("%s: cannot replace %s: %s; the config was not changed",
			where, safetext.QuotePath(target), safetext.Line(safeopen.Cause(err).Error()))
	}
	if now, ok := gate.WrittenVersion(target, gate.VersionOf(&written)); ok {
		lock.record(now)
	}
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
		if errors.Is(err, unix.EINVAL) { // a file system without directory fsync
			err = nil
		}
	}
	if err != nil {
		err = fmt.Errorf("%s: changed, but cannot fsync its directory %s: %s; check the file system",
			where, safetext.QuotePath(dir), safetext.Line(safeopen.Cause(err).Error()))
		return err
	}
	return nil
}
