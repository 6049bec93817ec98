//go:build linux

package gateconf

// A whole-file edit of the config by a person (`cron-gate edit`, visudo's
// model): lock, read, let the person change a copy, check it, replace the
// file atomically. The editor and the questions are the command's
// (internal/crongate/edit.go); the file handling is here, next to
// SetPaused, whose lock, read and replacement it shares.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// sessionLockWait bounds BeginEdit's wait for the config lock: a SetPaused
// in progress lets go within seconds; another edit session may hold it
// for as long as its person edits, and is reported at once after this.
const sessionLockWait = 10 * time.Second

// ErrConfigChanged is wrapped by EditSession.Save's error when the config
// no longer holds what BeginEdit read: something that does not take the
// config lock (an editor, a deployment tool) changed it meanwhile.
var ErrConfigChanged = errors.New("changed by someone else during the edit")

// EditSession is one edit of the whole config file, holding the config
// lock (the one SetPaused takes) from BeginEdit to Close, so that no
// resume edits the file meanwhile.
type EditSession struct {
	Path   string // the config as named (for messages)
	Target string // the file that is replaced (Path with symlinks resolved)
	Orig   []byte // its content when the session began
	v      gate.FileVersion
	lock   *configLock
}

// BeginEdit takes the config lock at lockPath (as SetPaused does; waiting
// at most a few seconds, then an error saying the config is being edited)
// and reads the config at path, through a symlink if it is one, as
// gate.ReadConfigVersion reads it (never a half-written version). The
// config need not be valid: an edit is how a broken one is fixed. The file
// must exist. Call Close when done.
func BeginEdit(path, lockPath string) (*EditSession, error) {
	where := safetext.Where(path, 0)
	lock, err := editLock(lockPath, sessionLockWait)
	if err != nil {
		if errors.Is(err, errEditLockBusy) {
			return nil, fmt.Errorf("%s: is being edited (%v)", where, err)
		}
		return nil, err
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		lock.release()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: file does not exist; create it first (cron-gate edit only edits an existing config)", where)
		}
		return nil, fmt.Errorf("%s: cannot resolve the path: %s", where, safetext.Line(safeopen.Cause(err).Error()))
	}
	data, v, err := gate.ReadConfigVersion(target, lock.trusted())
	if err != nil {
		lock.release()
		return nil, err
	}
	return &EditSession{Path: path, Target: target, Orig: data, v: v, lock: lock}, nil
}

// Check parses data as the config would be parsed from Path (Parse: the
// error names the file and line).
func (s *EditSession) Check(data []byte) error {
	_, err := Parse(s.Path, data)
	return err
}

// Save replaces the config with data, which must pass Check (else its
// error, and nothing is written). The replacement is SetPaused's: a
// temporary file beside the target with the original's owner, group and
// mode, fsynced and renamed over it, the directory fsynced; a symlink
// stays a symlink. Just before the rename the target must still hold
// exactly what BeginEdit read, else nothing is written and the error wraps
// ErrConfigChanged.
func (s *EditSession) Save(data []byte) error {
	if err := s.Check(data); err != nil {
		return err
	}
	where := safetext.Where(s.Path, 0)
	err := editReplace(where, s.Target, s.Orig, data, s.v, s.lock)
	if errors.Is(err, errEditRaced) {
		return fmt.Errorf("%s: %w (it was saved without cron-gate edit, which does not wait for the lock); nothing was written", where, ErrConfigChanged)
	}
	return err
}

// Close releases the config lock. It may be called more than once.
func (s *EditSession) Close() {
	if s.lock != nil {
		s.lock.release()
		s.lock = nil
	}
}
