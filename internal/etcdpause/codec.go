//go:build linux

package etcdpause

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"
)

// ErrCorrupt is wrapped by the error for a key whose value is not a pause
// (or a resume record): the error names the key. The run path treats it
// like a corrupt pauses.json: the gate does not run.
var ErrCorrupt = errors.New("not a cron-gate pause record")

// maxValue bounds what the decoders look at: a pause written by cron-gate
// is a few hundred bytes.
const maxValue = 64 << 10

// EncodePause is the value of a pause key: gate.Pause as JSON, with By
// forced to gate.ByCommand (only command-line pauses are shared).
func EncodePause(p gate.Pause) ([]byte, error) {
	p.By = gate.ByCommand
	return json.Marshal(p)
}

// DecodePause parses the value of the pause key key. It accepts a JSON
// object whose fields are those of gate.Pause (unknown fields are ignored,
// for newer writers); "by" must be "command" or absent (a pause written by
// hand with etcdctl); the reason must pass gate.CheckReason and "who" the
// same check (no control or bidirectional characters: the value may come
// from any host's etcdctl and is shown on every host). Anything else is an
// error wrapping ErrCorrupt that names key, so a gate whose pause cannot be
// read does not run. It never panics.
func DecodePause(key string, data []byte) (gate.Pause, error) {
	var p gate.Pause
	if err := decodeObject(data, &p); err != nil {
		return gate.Pause{}, corrupt(key, err)
	}
	switch p.By {
	case "", gate.ByCommand:
		p.By = gate.ByCommand
	default:
		return gate.Pause{}, corrupt(key, fmt.Errorf("\"by\" is %q, want %q", p.By, gate.ByCommand))
	}
	if err := gate.CheckReason(p.Reason); err != nil {
		return gate.Pause{}, corrupt(key, err)
	}
	if err := safetext.Check(p.Who); err != nil {
		return gate.Pause{}, corrupt(key, fmt.Errorf("\"who\" %w", err))
	}
	return p, nil
}

// record is the value of a resume key, PREFIX/resumed/<gate>: what the
// watchdog needs to hold "stale" after a resume (gate.PauseFile.NoteResumed
// keeps the same thing in the local pauses.json).
type record struct {
	// Resumed is when the gate was last resumed by Clear, or the end of
	// an earlier pause with an expiry that had passed when the next pause
	// was set.
	Resumed time.Time `json:"resumed,omitzero"`
	// PauseUntil is the Until of the pause set last, zero if it has none
	// or was cleared: once it has passed, the gate resumed then (its key
	// has gone with its lease, so the pause key cannot tell).
	PauseUntil time.Time `json:"pause_until,omitzero"`
	Who        string    `json:"who,omitempty"`
	// ID names the Set or Clear call that wrote the record, so that a call
	// whose request timed out can tell whether it was applied.
	ID string `json:"id"`
}

// resumedAt is when the gate last resumed as far as r knows at now: the
// later of Resumed and a PauseUntil that has passed.
func (r record) resumedAt(now time.Time) time.Time {
	t := r.Resumed
	if !r.PauseUntil.IsZero() && !r.PauseUntil.After(now) && r.PauseUntil.After(t) {
		t = r.PauseUntil
	}
	return t
}

func decodeRecord(key string, data []byte) (record, error) {
	var r record
	if err := decodeObject(data, &r); err != nil {
		return record{}, corrupt(key, err)
	}
	return r, nil
}

// decodeObject unmarshals data, which must be one JSON object.
func decodeObject(data []byte, v any) error {
	if len(data) > maxValue {
		return fmt.Errorf("%d bytes, more than %d", len(data), maxValue)
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 {
		return errors.New("empty value")
	}
	if t[0] != '{' {
		return fmt.Errorf("not a JSON object: %s", snippet(data))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%v: %s", err, snippet(data))
	}
	return nil
}

func corrupt(key string, err error) error {
	return fmt.Errorf("etcd key %s: %w: %v; fix it or delete it (etcdctl del %s)", key, ErrCorrupt, err, key)
}

// snippet quotes the start of a value for an error message.
func snippet(data []byte) string {
	const n = 60
	s := string(data)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return fmt.Sprintf("%q", strings.ToValidUTF8(s, "\uFFFD"))
}
