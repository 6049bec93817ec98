//go:build linux

package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/statefile"
)

// Pause sources.
const (
	PausedByConfig  = "config"
	PausedByCommand = "command"
)

// Pause says that a gate does not run, who decided it and until when.
type Pause struct {
	By     string    `json:"by"` // PausedByConfig or PausedByCommand
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since,omitzero"` // unknown for config pauses
	Until  time.Time `json:"until,omitzero"` // zero: until resumed
	Who    string    `json:"who,omitempty"`  // user@host that paused from the command line
}

// Active reports whether the pause applies at now: a pause with an expiry
// ends by itself.
func (p *Pause) Active(now time.Time) bool {
	return p != nil && (p.Until.IsZero() || now.Before(p.Until))
}

const (
	pausesFile     = "pauses.json"
	pausesLockFile = ".pauses.lock"
)

type pauseDoc struct {
	V     int              `json:"v"`
	Gates map[string]Pause `json:"gates"`
	// Resumed is when each gate was last resumed (NoteResumed, resume.go),
	// for the watchdog's resume grace. Older readers ignore it.
	Resumed map[string]time.Time `json:"resumed,omitempty"`
}

// ReadPauses returns the pauses set from the command line, by gate. A
// missing file means none; a file that cannot be read or parsed is an
// error, so that a paused gate never runs because its pause was unreadable.
func ReadPauses(stateDir string) (map[string]Pause, error) {
	d, err := readPauseDoc(stateDir)
	if err != nil {
		return nil, err
	}
	return d.Gates, nil
}

// readPauseDoc reads pauses.json (ReadPauses has the rules) for a
// read-only view, which may be another user's (status): the state dir is
// opened whoever owns it. Gates is never nil.
func readPauseDoc(stateDir string) (*pauseDoc, error) {
	sd, err := safeopen.OpenDir(stateDir, stateDirOptions(false, true))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			// No state dir at all (or a state_dir that is a file):
			// nobody has paused anything from the command line.
			return &pauseDoc{V: 1, Gates: map[string]Pause{}}, nil
		}
		return nil, fmt.Errorf("pause state: %w", err)
	}
	defer sd.Close()
	return readPauseDocIn(sd)
}

// readPauseDocIn reads pauses.json in the open state dir sd: a missing
// file is no pause; a file that is not a regular file, is larger than
// 16 MiB or does not parse is an error.
func readPauseDocIn(sd *safeopen.Dir) (*pauseDoc, error) {
	p := sd.Join(pausesFile)
	data, err := sd.ReadFile(pausesFile, maxPausesBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return &pauseDoc{V: 1, Gates: map[string]Pause{}}, nil
	}
	if err != nil {
		var fe *safeopen.FileError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("pause state %w", fe)
		}
		return nil, fmt.Errorf("pause state %s: %w", p, safeopen.Cause(err))
	}
	var d pauseDoc
	if err := json.Unmarshal(data, &d); err != nil || d.V != 1 {
		return nil, fmt.Errorf("pause state %s is corrupt; fix or remove it (pauses set from the command line are lost then)", p)
	}
	if d.Gates == nil {
		d.Gates = map[string]Pause{}
	}
	return &d, nil
}

// openRunState is a run's use of the state dir (README, "Unwritable state
// dir"): the state dir opened to be written, created if missing (nil when
// it cannot be used: dirErr says why, and the run is not recorded), and
// the command-line pauses. A state dir refused for safety (another user's,
// or under another user's directory) is not this user's state: its pauses
// are neither obeyed nor allowed to stop the job, which warn says. err is
// set when the pauses exist but cannot be read: the run must not go on.
func openRunState(stateDir string, warn func(format string, args ...any)) (sd *safeopen.Dir, dirErr error, pauses map[string]Pause, err error) {
	sd, dirErr = OpenStateDir(stateDir)
	switch {
	case dirErr == nil:
		d, err := readPauseDocIn(sd)
		if err != nil {
			return sd, nil, nil, err
		}
		return sd, nil, d.Gates, nil
	case errors.Is(dirErr, safeopen.ErrUnsafe):
		warn("state dir %s is not safe to use (%v); its pauses are ignored", stateDir, dirErr)
		return nil, dirErr, map[string]Pause{}, nil
	}
	// Not usable to write in. Pauses may still be readable there (a
	// read-only state dir), or there is no state dir at all.
	d, err := readPauseDoc(stateDir)
	if err != nil {
		return nil, dirErr, nil, err
	}
	return nil, dirErr, d.Gates, nil
}

// updatePauses re-reads pauses.json under its lock, lets fn change the
// map, and writes it back atomically: concurrent pause and resume calls
// never lose each other's changes.
func updatePauses(stateDir string, fn func(map[string]Pause) bool) error {
	return updatePauseDoc(stateDir, func(d *pauseDoc) bool { return fn(d.Gates) })
}

// updatePauseDoc is updatePauses over the whole document.
func updatePauseDoc(stateDir string, fn func(*pauseDoc) bool) error {
	dir, err := OpenStateDir(stateDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	p := dir.Join(pausesFile)
	err = statefile.Update(dir, pausesLockFile, pausesFile, maxPausesBytes, statefile.Options{Perm: 0o644}, func(old []byte) ([]byte, error) {
		d := pauseDoc{V: 1, Gates: map[string]Pause{}}
		if old != nil {
			if err := json.Unmarshal(old, &d); err != nil || d.V != 1 {
				return nil, fmt.Errorf("pause state %s is corrupt; fix or remove it", p)
			}
			if d.Gates == nil {
				d.Gates = map[string]Pause{}
			}
		}
		if !fn(&d) {
			return nil, nil
		}
		data, err := json.MarshalIndent(d, "", "  ")
		return append(data, '\n'), err
	})
	if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
		return fmt.Errorf("pause state %w", fe)
	}
	return err
}

// SetPause records a command-line pause of gate (replacing an earlier one).
func SetPause(stateDir, gate string, p Pause) error {
	p.By = PausedByCommand
	return updatePauses(stateDir, func(m map[string]Pause) bool {
		m[gate] = p
		return true
	})
}

// ClearPause removes gate's command-line pause, expired or not, and
// reports whether there was one.
func ClearPause(stateDir, gate string) (bool, error) {
	had := false
	err := updatePauses(stateDir, func(m map[string]Pause) bool {
		_, had = m[gate]
		delete(m, gate)
		return had
	})
	return had, err
}

// PauseOf returns the pause that applies to gate at now, or nil: a
// command-line pause first (it carries since, until and who), else the
// config's.
func PauseOf(g *GateConfig, cmdPauses map[string]Pause, now time.Time) *Pause {
	if p, ok := cmdPauses[g.Name]; ok && p.Active(now) {
		return &p
	}
	if g.Paused {
		return &Pause{By: PausedByConfig, Reason: g.Reason}
	}
	return nil
}

// ConfigLockPath is the lock file that serialises edits of the config
// (resume of a config pause); it lives in the state dir because the
// config's own directory (/etc) may not be writable.
func ConfigLockPath(stateDir string) string {
	return filepath.Join(stateDir, ".config.lock")
}
