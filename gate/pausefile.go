//go:build linux

package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/statefile"
)

// PauseFile is this host's pauses: pauses.json in a state dir, and the time
// each gate was last resumed beside them (for the watchdog's resume
// grace). Every change re-reads the file under its lock (.pauses.lock)
// and writes it back atomically (package statefile), so concurrent
// pause and resume calls from any number of processes never lose each
// other's changes. A pauses.json that exists but cannot be read or
// parsed is an error wherever it is read: a paused gate never runs
// because its pause was unreadable.
//
// A run and a view read it differently (Get, List): see there.
type PauseFile struct {
	dir string
}

var _ PauseStore = (*PauseFile)(nil)

// NewPauseFile returns the pauses kept in the state dir stateDir. Nothing is
// opened until a method is called.
func NewPauseFile(stateDir string) *PauseFile { return &PauseFile{dir: stateDir} }

// Dir returns the state dir.
func (f *PauseFile) Dir() string { return f.dir }

const (
	pausesFile     = "pauses.json"
	pausesLockFile = ".pauses.lock"
	// maxPausesBytes bounds what is read of pauses.json: a larger file
	// is an error, so that no file can make a call slow or big.
	maxPausesBytes = 16 << 20
)

// pauseDoc is pauses.json.
type pauseDoc struct {
	V     int              `json:"v"`
	Gates map[string]Pause `json:"gates"`
	// Resumed is when each gate was last resumed (NoteResumed), for the
	// watchdog's resume grace. Older readers ignore it.
	Resumed map[string]time.Time `json:"resumed,omitempty"`
}

func newPauseDoc() *pauseDoc { return &pauseDoc{V: 1, Gates: map[string]Pause{}} }

// ErrUntrusted is wrapped by PauseFile.Get's error when the state dir, or a
// directory or symlink above it, is another user's (the /var/tmp
// fallback made by someone else, a symlink planted in /tmp): it is not
// this user's state, so the pauses found there are neither obeyed nor
// allowed to stop a run. The error says so, for a warning; it also wraps
// the refusal (safeopen's ErrUnsafe).
var ErrUntrusted = errors.New("state dir not trusted")

type untrustedError struct {
	dir string
	err error
}

func (e *untrustedError) Error() string {
	return fmt.Sprintf("state dir %s is not safe to use (%v); its pauses are ignored", e.dir, e.err)
}

func (e *untrustedError) Unwrap() []error { return []error{ErrUntrusted, e.err} }

// Get returns gate's command-line pause as a run must obey it. The state
// dir is opened as the run's journal opens it: created if it is missing,
// and used only if it and everything above it is this user's or root's;
// otherwise the error wraps ErrUntrusted and no pause applies. A state
// dir that is this user's but cannot be written (read-only) is still
// read. The pause returned may have ended (Pause.Active).
func (f *PauseFile) Get(_ context.Context, gate string) (*Pause, error) {
	sd, err := statefile.OpenDir(f.dir)
	var d *pauseDoc
	switch {
	case err == nil:
		d, err = readPauses(sd)
		sd.Close()
	case errors.Is(err, safeopen.ErrUnsafe):
		return nil, &untrustedError{dir: f.dir, err: err}
	default:
		// Not usable to write in. Pauses may still be readable there
		// (a read-only state dir), or there is no state dir at all.
		d, err = f.read()
	}
	if err != nil {
		return nil, err
	}
	if p, ok := d.Gates[gate]; ok {
		return &p, nil
	}
	return nil, nil
}

// List returns the pauses as a view shows them (status, the dashboard,
// pause's check of known names): read whoever owns the state dir, since
// such a view may run as another user; it creates nothing. No state dir
// or no pauses.json is no pauses.
func (f *PauseFile) List(context.Context) (map[string]Pause, error) {
	d, err := f.read()
	if err != nil {
		return nil, err
	}
	return d.Gates, nil
}

// Resumes returns when each gate was last resumed, as NoteResumed
// recorded it. (A command-line pause that ended by itself resumed at its
// Until: the caller, who has the clock, sees that in List.)
func (f *PauseFile) Resumes(context.Context) (map[string]time.Time, error) {
	d, err := f.read()
	if err != nil {
		return nil, err
	}
	return d.Resumed, nil
}

// Set records a command-line pause of gate (replacing an earlier one).
func (f *PauseFile) Set(ctx context.Context, gate string, p Pause) error {
	p.By = ByCommand
	return f.update(ctx, func(d *pauseDoc) bool {
		d.Gates[gate] = p
		return true
	})
}

// Clear removes gate's command-line pause, expired or not, and reports
// whether there was one. It does not record a resume: NoteResumed does.
func (f *PauseFile) Clear(ctx context.Context, gate string) (bool, error) {
	had := false
	err := f.update(ctx, func(d *pauseDoc) bool {
		_, had = d.Gates[gate]
		delete(d.Gates, gate)
		return had
	})
	return had, err
}

// NoteResumed records that gate was resumed at t (for the watchdog: a
// paused gate's last success grows old while it is paused, so right
// after a resume it would look stale until its next run). `cron-gate
// resume` records it for a command-line and for a config pause alike; a
// config pause lifted by editing the file by hand leaves no record.
func (f *PauseFile) NoteResumed(gate string, t time.Time) error {
	return f.update(context.Background(), func(d *pauseDoc) bool {
		if d.Resumed == nil {
			d.Resumed = map[string]time.Time{}
		}
		d.Resumed[gate] = t
		return true
	})
}

// read reads pauses.json for a view, whoever owns the state dir.
func (f *PauseFile) read() (*pauseDoc, error) {
	sd, err := statefile.OpenDirToRead(f.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			// No state dir at all (or a state_dir that is a file):
			// nobody has paused anything from the command line.
			return newPauseDoc(), nil
		}
		return nil, fmt.Errorf("pause state: %w", err)
	}
	defer sd.Close()
	return readPauses(sd)
}

// readPauses reads pauses.json in the open state dir sd: a missing file is no
// pause; a file that is not a regular file, is larger than 16 MiB or does
// not parse is an error.
func readPauses(sd *safeopen.Dir) (*pauseDoc, error) {
	p := sd.Join(pausesFile)
	data, err := sd.ReadFile(pausesFile, maxPausesBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return newPauseDoc(), nil
	}
	if err != nil {
		return nil, statefile.FileErr("pause state", p, err)
	}
	d := &pauseDoc{}
	if err := json.Unmarshal(data, d); err != nil || d.V != 1 {
		return nil, fmt.Errorf("pause state %s is corrupt; fix or remove it (pauses set from the command line are lost then)", p)
	}
	if d.Gates == nil {
		d.Gates = map[string]Pause{}
	}
	return d, nil
}

// update re-reads pauses.json under its lock, lets fn change it (false:
// no change to write), and writes it back atomically.
func (f *PauseFile) update(ctx context.Context, fn func(*pauseDoc) bool) error {
	dir, err := statefile.OpenDir(f.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	p := dir.Join(pausesFile)
	err = statefile.Update(ctx, dir, pausesLockFile, pausesFile, maxPausesBytes, 0, statefile.Options{Perm: 0o644}, func(old []byte) ([]byte, error) {
		d := newPauseDoc()
		if old != nil {
			if err := json.Unmarshal(old, d); err != nil || d.V != 1 {
				return nil, fmt.Errorf("pause state %s is corrupt; fix or remove it", p)
			}
			if d.Gates == nil {
				d.Gates = map[string]Pause{}
			}
		}
		if !fn(d) {
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
