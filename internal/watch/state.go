//go:build linux

package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/crongate/crongate/internal/safeopen"
)

// File names in the state dir.
const (
	StateFile = "check.json"  // the watchdog's memory (State)
	LockFile  = ".check.lock" // held across observe, notify and save
)

// State is what the watchdog remembers between checks (check.json, schema
// v1). It is only ever replaced whole and atomically, under LockFile.
type State struct {
	V       int       `json:"v"`
	Updated time.Time `json:"updated"` // the last check
	Checks  int64     `json:"checks"`  // checks made (counter)
	// Notifications delivered and failed, per notifier attempt (counters).
	Sent   int64                 `json:"notifications_sent"`
	Failed int64                 `json:"notification_failures"`
	Gates  map[string]*GateState `json:"gates"`
	// ProbeWarnings are the probes' warnings of the last check, by what
	// failed ("timer GATE", "crontab", "crontab SOURCE"): each is said
	// on stderr once, when it appears or changes.
	ProbeWarnings map[string]string `json:"probe_warnings,omitempty"`
}

// GateState is what the watchdog remembers of one gate.
type GateState struct {
	// FirstSeen is the first check that watched the gate for staleness:
	// a gate that has never succeeded is "missing" once FirstSeen is
	// stale_factor intervals ago.
	FirstSeen time.Time `json:"first_seen,omitzero"`
	// LastPaused is the last check that saw the gate paused: the resume
	// grace also runs from here (a config pause removed by hand leaves no
	// resume record).
	LastPaused time.Time        `json:"last_paused,omitzero"`
	Conditions map[string]*Cond `json:"conditions,omitempty"`
}

// Cond is one condition of one gate that is bad, or was and has not yet
// been declared recovered to everyone who was told.
type Cond struct {
	Bad     bool      `json:"bad"`      // the last check that judged it found it bad
	Count   int       `json:"count"`    // consecutive bad checks
	Since   time.Time `json:"since"`    // first bad check of this streak
	LastBad time.Time `json:"last_bad"` // last bad check
	Detail  string    `json:"detail"`   // what the last bad check saw
	// Muted: bad at the first check ever and begun before it (the
	// baseline); it does not alert until remind_after after Since, and is
	// forgotten once it clears. KnownAtInstall stays set once the
	// reminder has unmuted it.
	Muted          bool `json:"muted,omitempty"`
	KnownAtInstall bool `json:"known_at_install,omitempty"`
	// Alerted lists the notifiers the alert was delivered to; Recovered
	// those the recovery was delivered to (while it is being delivered).
	Alerted   []string  `json:"alerted,omitempty"`
	AlertedAt time.Time `json:"alerted_at,omitzero"`
	Recovered []string  `json:"recovered,omitempty"`
}

// RemindAt is when a condition muted by the first check alerts if it is
// still bad: remind (remind_after) after that check.
func (e *Cond) RemindAt(remind time.Duration) time.Time { return e.Since.Add(remind) }

// MaxStateBytes bounds check.json: more is refused (125), so that no file
// can make a check slow or big. A state of a thousand gates with every
// condition bad is well under 4 MiB.
const MaxStateBytes = 16 << 20

// readStateFile reads check.json in stateDir without locking, as a
// read-only view may (another user's state dir too): nil when there is
// none; an error, naming the file, when it is not a regular file (a FIFO
// never blocks the read), is larger than MaxStateBytes or cannot be read.
func readStateFile(stateDir string) ([]byte, error) {
	sd, err := safeopen.OpenDir(stateDir, safeopen.DirOptions{What: "state dir", Trust: safeopen.TrustAny})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	data, err := sd.ReadFile(StateFile, MaxStateBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, stateErr(err)
	}
	return data, nil
}

// stateErr words an error about check.json.
func stateErr(err error) error {
	var fe *safeopen.FileError
	if errors.As(err, &fe) {
		return fmt.Errorf("watchdog state %w", fe)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.Base(pe.Path) == StateFile {
		return fmt.Errorf("watchdog state %s: %v", pe.Path, pe.Err)
	}
	return err
}

// newState is the state of a first check.
func newState() *State {
	return &State{V: 1, Gates: map[string]*GateState{}}
}

// parseState reads check.json; nil data is a first run.
func parseState(path string, data []byte) (*State, error) {
	if data == nil {
		return nil, nil
	}
	st := &State{}
	if err := json.Unmarshal(data, st); err != nil || st.V != 1 {
		return nil, fmt.Errorf("watchdog state %s is corrupt; remove it to start again (the conditions bad now are then muted as at a first run)", path)
	}
	if st.Gates == nil {
		st.Gates = map[string]*GateState{}
	}
	for n, g := range st.Gates {
		if g == nil {
			delete(st.Gates, n)
		} else {
			for c, e := range g.Conditions {
				if e == nil {
					delete(g.Conditions, c)
				}
			}
		}
	}
	return st, nil
}

func (st *State) gate(name string) *GateState {
	g := st.Gates[name]
	if g == nil {
		g = &GateState{}
		st.Gates[name] = g
	}
	return g
}

// cond returns the remembered condition, or nil.
func (st *State) cond(gateName, condition string) *Cond {
	if g := st.Gates[gateName]; g != nil {
		return g.Conditions[condition]
	}
	return nil
}

func has(list []string, id string) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

func without(list, drop []string) []string {
	var out []string
	for _, x := range list {
		if !has(drop, x) {
			out = append(out, x)
		}
	}
	return out
}
