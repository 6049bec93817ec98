//go:build linux

package gateconf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/cfgtext"
)

// Pause and Resume are the one implementation of pausing and resuming a
// gate, shared by `cron-gate pause/resume` and the dashboard's buttons.
// Both are safe to call concurrently from any number of processes: the
// pauses file is re-read and merged under a lock (gate.SetPause), and the
// config is edited in place under its own lock, keeping its comments and
// layout (SetPaused).

// Pause pauses gate name from the command line (pauses.json in the state
// dir), replacing an earlier command-line pause. p.Since and p.Who are
// filled in when empty; a p.Until in the past and a reason that
// gate.CheckReason refuses (control or bidirectional characters) are
// refused, before anything is written.
//
// A name cron-gate does not know — not declared in the config, without
// records in the state dir and not paused already — is refused with an
// *UnknownGateError (which suggests the closest known name), unless force:
// a typo must not pause nothing while the real gate keeps running. Force
// is for pausing a gate ahead of its first run. The dashboard passes
// false: its buttons only name gates it lists, which are known ones.
func Pause(cfg *gate.Config, name string, p gate.Pause, force bool) error {
	if err := gate.CheckName(name); err != nil {
		return err
	}
	if err := gate.CheckReason(p.Reason); err != nil {
		return fmt.Errorf("pause gate %s: %w", name, err)
	}
	if !force {
		if err := checkKnown(cfg, name); err != nil {
			return err
		}
	}
	now := time.Now()
	if p.Since.IsZero() {
		p.Since = now
	}
	if p.Who == "" {
		p.Who = gate.Who()
	}
	if !p.Until.IsZero() && !p.Until.After(now) {
		return fmt.Errorf("pause gate %s: until %s is in the past", name, p.Until.Format(time.RFC3339))
	}
	if cfg.Shared != nil {
		// Shared by every host ([etcd]); this host's pauses.json is not
		// written, so the pause has one home.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
		defer cancel()
		if err := cfg.Shared.Set(ctx, name, p); err != nil {
			if errors.Is(err, gate.ErrCoordinatorDown) {
				return fmt.Errorf("pause gate %s: %w; the pause may or may not have been set: check with cron-gate status once the cluster answers", name, err)
			}
			return fmt.Errorf("pause gate %s: %w", name, err)
		}
		return nil
	}
	if err := gate.SetPause(gate.StateDirFor(cfg), name, p); err != nil {
		return fmt.Errorf("pause gate %s: %w", name, err)
	}
	return nil
}

// Resumed says what Resume did.
type Resumed struct {
	Msg     string // one line for people: what was lifted
	Warning string // non-empty when the resume time could not be recorded
}

// Resume lifts gate name's command-line pause (with or without an expiry),
// this host's and, with [etcd], the shared one. A pause set in the config
// (`paused = true`) is lifted only with force, by setting paused = false in
// the file, before anything else: if that fails nothing has changed.
// Without force such a gate is refused before anything changes, with an
// error that says so. This is
// the dashboard's resume and force-resume; `cron-gate resume` is forced.
// The resume time is recorded for the watchdog's resume grace; failing to
// record it is a Warning, not an error.
func Resume(cfg *gate.Config, name string, force bool) (Resumed, error) {
	if err := gate.CheckName(name); err != nil {
		return Resumed{}, err
	}
	stateDir := gate.StateDirFor(cfg)
	inConfig := cfg.Gate(name).Paused
	if inConfig && !force {
		return Resumed{}, fmt.Errorf("gate %s is paused in %s (paused = true); force-resume sets paused = false there", name, cfg.Path)
	}
	// The config's pause is lifted first: if the file cannot be edited,
	// nothing else has changed and the gate stays paused everywhere (the
	// error says so); the command-line pauses are lifted only after.
	if inConfig {
		if err := SetPaused(cfg.Path, name, false, gate.ConfigLockPath(stateDir)); err != nil {
			return Resumed{}, &EditError{Gate: name, Path: cfg.Path, Err: err}
		}
	}
	had, err := gate.ClearPause(stateDir, name)
	if err != nil {
		return Resumed{}, fmt.Errorf("resume gate %s: %w", name, err)
	}
	hadShared := false
	if cfg.Shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
		hadShared, err = cfg.Shared.Clear(ctx, name)
		cancel()
		if err != nil {
			return Resumed{}, fmt.Errorf("resume gate %s: shared pause: %w", name, err)
		}
	}
	var r Resumed
	switch {
	case inConfig:
		r.Msg = fmt.Sprintf("resumed gate %s: set paused = false in %s", name, cfg.Path)
	case had && hadShared:
		r.Msg = fmt.Sprintf("resumed gate %s: lifted its command-line pauses, this host's and the shared one", name)
	case hadShared:
		// The store records the resume time itself, for every host.
		return Resumed{Msg: fmt.Sprintf("resumed gate %s: lifted its shared pause (every host)", name)}, nil
	case had:
		r.Msg = fmt.Sprintf("resumed gate %s: lifted its command-line pause", name)
	default:
		msg := fmt.Sprintf("gate %s was not paused", name)
		var unknown *UnknownGateError
		if errors.As(checkKnown(cfg, name), &unknown) {
			msg += "; " + unknown.what()
		}
		return Resumed{Msg: msg}, nil
	}
	if err := gate.NoteResumed(stateDir, name, time.Now()); err != nil {
		r.Warning = fmt.Sprintf("gate %s: the resume time could not be recorded (the watchdog may call it stale until its next run): %v", name, err)
	}
	return r, nil
}

// EditError is Resume's error when the config's pause could not be
// lifted: the file was left as it was, and the gate is still paused.
type EditError struct {
	Gate, Path string
	Err        error
}

func (e *EditError) Error() string {
	return fmt.Sprintf("resume gate %s: it is paused in %s and that file could not be changed: %v", e.Gate, e.Path, e.Err)
}

func (e *EditError) Unwrap() error { return e.Err }

// Hint says what to do instead.
func (e *EditError) Hint() string {
	return fmt.Sprintf("set paused = false under [gates.%s] by hand", e.Gate)
}

// UnknownGateError is Pause's refusal of a name cron-gate does not know.
type UnknownGateError struct {
	Name    string
	Config  string // the config's path
	Suggest string // the closest known gate name, "" if none is close
}

func (e *UnknownGateError) what() string {
	in := "the config (there is no config file)"
	if e.Config != "" {
		in = cfgtext.QuotePath(e.Config)
	}
	s := fmt.Sprintf("no gate %s is declared in %s or has records", e.Name, in)
	if e.Suggest != "" {
		s += fmt.Sprintf(" (did you mean %s?)", e.Suggest)
	}
	return s
}

func (e *UnknownGateError) Error() string {
	return fmt.Sprintf("pause gate %s: %s", e.Name, e.what())
}

// checkKnown returns an *UnknownGateError unless name is declared in cfg,
// has a directory of records in the state dir, or is paused from the
// command line (this host's pauses, or the shared ones).
func checkKnown(cfg *gate.Config, name string) error {
	if _, ok := cfg.Gates[name]; ok {
		return nil
	}
	stateDir := gate.StateDirFor(cfg)
	if fi, err := os.Stat(filepath.Join(stateDir, "gates", name)); err == nil && fi.IsDir() {
		return nil
	}
	known := map[string]bool{}
	for n := range cfg.Gates {
		known[n] = true
	}
	if ents, err := os.ReadDir(filepath.Join(stateDir, "gates")); err == nil {
		for _, e := range ents {
			if e.IsDir() && gate.CheckName(e.Name()) == nil {
				known[e.Name()] = true
			}
		}
	}
	// Unreadable pauses are not this check's business: Pause itself (or
	// the next run) reports them.
	pauses, _ := gate.ReadPauses(stateDir)
	for n := range pauses {
		known[n] = true
	}
	if cfg.Shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
		shared, _ := cfg.Shared.List(ctx)
		cancel()
		for n := range shared {
			known[n] = true
		}
	}
	if known[name] {
		return nil
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names) // ties go to the first name in order
	return &UnknownGateError{Name: name, Config: cfg.Path, Suggest: cfgSuggest(name, names)}
}
