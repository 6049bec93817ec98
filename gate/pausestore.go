//go:build linux

package gate

// Command-line pauses: this file keeps cron-gate's command-line pauses: `cron-gate pause
// NAME` records one, `cron-gate resume NAME` lifts it, and the gate's runs
// are skipped while it is active. A PauseStore holds them. PauseFile is this host's,
// pauses.json in the state dir; package etcdpause is a PauseStore that every
// host naming the same etcd cluster shares (cron-gate-etcd). Which stores
// apply to a config, and how a run, the status and pause/resume combine
// them, is package gate's (gate.Pauses): pauses are passed explicitly,
// never kept in a config.
//
// A pause set in the config file (`paused = true`) is not a PauseStore's: it
// is part of the config (gate.GateConfig.Paused), and gate.PauseOf
// weighs it against the command-line one.

import (
	"context"
	"errors"
	"os"
	"os/user"
	"strconv"
	"time"
)

// Pause sources.
const (
	ByConfig  = "config"
	ByCommand = "command"
)

// Pause says that a gate does not run, who decided it and until when.
type Pause struct {
	By     string    `json:"by"` // ByConfig or ByCommand
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

// PauseStore holds command-line pauses by gate name. Every method returns in
// bounded time (a shared store's timeout, or the caller's ctx if sooner);
// an error that means the store could not be reached wraps
// ErrCoordinatorDown: the pause state is unknown, never "not paused".
type PauseStore interface {
	// Get returns the gate's pause, nil when there is none. It may
	// return one that has ended: the caller decides with Active, at its
	// own clock.
	Get(ctx context.Context, gate string) (*Pause, error)
	// List returns every gate's pause (ended ones may be among them);
	// with an error, the pauses it could read.
	List(ctx context.Context) (map[string]Pause, error)
	// Set pauses a gate from the command line (replacing an earlier
	// pause); the stored pause's By is ByCommand.
	Set(ctx context.Context, gate string, p Pause) error
	// Clear lifts the gate's pause, ended or not; had tells whether
	// there was one.
	Clear(ctx context.Context, gate string) (had bool, err error)
	// Resumes returns when each gate was last resumed, as far as the
	// store recorded it.
	Resumes(ctx context.Context) (map[string]time.Time, error)
}

// PauseWarner is a PauseStore that may have a warning about itself for each run
// that reads it: cron-gate says it on stderr and in the run's start record.
// (etcdpause: a cluster member older than the minimum safe server
// version.)
type PauseWarner interface {
	// Warning returns the warning, "" if none, waiting at most wait for
	// a check still running.
	Warning(wait time.Duration) string
}

// ErrCoordinatorDown is wrapped by a PauseStore error that means the store
// could not be reached (an etcd cluster without quorum, say): the pause
// state is unknown.
var ErrCoordinatorDown = errors.New("etcd unavailable")

// MergePauses merges shared pauses into local ones: where both have a gate, the
// active one wins, the shared one if both are.
func MergePauses(local, shared map[string]Pause, now time.Time) map[string]Pause {
	out := make(map[string]Pause, len(local)+len(shared))
	for k, v := range local {
		out[k] = v
	}
	for k, v := range shared {
		if l, ok := out[k]; ok && l.Active(now) && !v.Active(now) {
			continue
		}
		out[k] = v
	}
	return out
}

// Who names the user and host that runs a pause or resume, for the
// status: $SUDO_USER, else the user, else "uid N"; then "@" and the host
// name.
func Who() string {
	name := os.Getenv("SUDO_USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		} else {
			name = "uid " + strconv.Itoa(os.Getuid())
		}
	}
	h, _ := os.Hostname()
	return name + "@" + h
}
