//go:build linux

package crongate

// Pausing and resuming gates: the one implementation shared by `cron-gate
// pause/resume` and the dashboard's buttons. Both are safe
// to call concurrently from any number of processes: the pauses file is
// re-read and merged under a lock (gate.PauseFile), a shared store's writes
// are transactions (package etcdpause), and the config is edited in place
// under its own lock, keeping its comments and layout. The config editor
// is passed in (Editor; gateconf.SetPaused here, one that fails in the
// tests), and the pause stores are passed in (gate.Pauses), never taken
// from the config.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"
)

// Editor sets `paused` of the gate name in the config file at path, in
// place, holding the lock file lockPath; on error the file is as it was.
// gateconf.SetPaused is the one the binaries pass.
type Editor func(path, name string, paused bool, lockPath string) error

// Pause pauses gate name from the command line, replacing an earlier
// command-line pause: in this host's pauses.json, or with [etcd] in the
// shared store only, so that the pause has one home. p.Since and p.Who
// are filled in when empty; a p.Until in the past and a reason that
// gate.CheckReason refuses (control or bidirectional characters) are
// refused, before anything is written.
//
// A name cron-gate does not know — not declared in the config, without
// records in the state dir and not paused already — is refused with an
// *UnknownGateError (which suggests the closest known name), unless force:
// a typo must not pause nothing while the real gate keeps running. Force
// is for pausing a gate ahead of its first run. The dashboard passes
// false: its buttons only name gates it lists, which are known ones.
func Pause(cfg *gate.Config, ps gate.Pauses, name string, p gate.Pause, force bool) error {
	if err := gate.CheckName(name); err != nil {
		return err
	}
	if err := gate.CheckReason(p.Reason); err != nil {
		return fmt.Errorf("pause gate %s: %w", name, err)
	}
	ps = ps.For(cfg)
	if !force {
		if err := checkKnown(cfg, ps, name); err != nil {
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
	if ps.Shared != nil {
		return pauseShared(cfg, ps.Shared, name, p)
	}
	if err := ps.Local.Set(context.Background(), name, p); err != nil {
		return fmt.Errorf("pause gate %s: %w", name, err)
	}
	return nil
}

// pauseShared sets the pause in the store every host shares; this host's
// pauses.json is not written.
func pauseShared(cfg *gate.Config, shared gate.PauseStore, name string, p gate.Pause) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
	defer cancel()
	if err := shared.Set(ctx, name, p); err != nil {
		if errors.Is(err, gate.ErrCoordinatorDown) {
			return fmt.Errorf("pause gate %s: %w; the pause may or may not have been set: check with cron-gate status once the cluster answers", name, err)
		}
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
// the file with edit, before anything else: if that fails nothing has
// changed. Without force such a gate is refused before anything changes,
// with an error that says so. This is the dashboard's resume and
// force-resume; `cron-gate resume` is forced. The resume time is recorded
// for the watchdog's resume grace; failing to record it is a Warning, not
// an error.
func Resume(cfg *gate.Config, ps gate.Pauses, edit Editor, name string, force bool) (Resumed, error) {
	if err := gate.CheckName(name); err != nil {
		return Resumed{}, err
	}
	ps = ps.For(cfg)
	inConfig := cfg.Gate(name).Paused
	if inConfig && !force {
		return Resumed{}, fmt.Errorf("gate %s is paused in %s (paused = true); force-resume sets paused = false there", name, cfg.Path)
	}
	// The config's pause is lifted first: if the file cannot be edited,
	// nothing else has changed and the gate stays paused everywhere (the
	// error says so); the command-line pauses are lifted only after.
	if inConfig {
		if err := edit(cfg.Path, name, false, gate.ConfigLockPath(gate.StateDirFor(cfg))); err != nil {
			return Resumed{}, &EditError{Gate: name, Path: cfg.Path, Err: err}
		}
	}
	had, hadShared, err := clearPauses(cfg, ps, name)
	if err != nil {
		return Resumed{}, err
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
		return Resumed{Msg: notPaused(cfg, ps, name)}, nil
	}
	if err := ps.Local.NoteResumed(name, time.Now()); err != nil {
		r.Warning = fmt.Sprintf("gate %s: the resume time could not be recorded (the watchdog may call it stale until its next run): %v", name, err)
	}
	return r, nil
}

// clearPauses lifts the gate's command-line pauses: this host's, then the
// shared one; had and hadShared say which there were.
func clearPauses(cfg *gate.Config, ps gate.Pauses, name string) (had, hadShared bool, err error) {
	had, err = ps.Local.Clear(context.Background(), name)
	if err != nil {
		return false, false, fmt.Errorf("resume gate %s: %w", name, err)
	}
	if ps.Shared == nil {
		return had, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
	defer cancel()
	hadShared, err = ps.Shared.Clear(ctx, name)
	if err != nil {
		return false, false, fmt.Errorf("resume gate %s: shared pause: %w", name, err)
	}
	return had, hadShared, nil
}

// notPaused says that a gate was not paused, and, for a name cron-gate
// does not know, what was meant.
func notPaused(cfg *gate.Config, ps gate.Pauses, name string) string {
	msg := fmt.Sprintf("gate %s was not paused", name)
	if unknown, ok := errors.AsType[*UnknownGateError](checkKnown(cfg, ps, name)); ok {
		msg += "; " + unknown.what()
	}
	return msg
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
		in = safetext.QuotePath(e.Config)
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

// CheckKnown returns an *UnknownGateError (its What says it for any
// command) unless cron-gate knows the name: declared in cfg, with records
// in the state dir, or paused from the command line. Pause applies it;
// `cron-gate why` too.
func CheckKnown(cfg *gate.Config, ps gate.Pauses, name string) error {
	return checkKnown(cfg, ps.For(cfg), name)
}

// What says the name is unknown, with the closest known name, without
// naming the command: "no gate x is declared in … or has records (did
// you mean y?)".
func (e *UnknownGateError) What() string { return e.what() }

// checkKnown returns an *UnknownGateError unless name is declared in cfg,
// has a directory of records in the state dir, or is paused from the
// command line (this host's pauses, or the shared ones).
func checkKnown(cfg *gate.Config, ps gate.Pauses, name string) error {
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
	for n := range pausedNames(cfg, ps) {
		known[n] = true
	}
	if known[name] {
		return nil
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names) // ties go to the first name in order
	return &UnknownGateError{Name: name, Config: cfg.Path, Suggest: safetext.Closest(name, names)}
}

// pausedNames are the gates with a command-line pause, this host's or
// shared. Pauses that cannot be read are not checkKnown's business: Pause
// itself (or the next run) reports them.
func pausedNames(cfg *gate.Config, ps gate.Pauses) map[string]gate.Pause {
	local, _ := ps.Local.List(context.Background())
	if ps.Shared == nil {
		return local
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
	defer cancel()
	shared, _ := ps.Shared.List(ctx)
	return gate.MergePauses(local, shared, time.Now())
}
