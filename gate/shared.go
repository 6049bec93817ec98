//go:build linux

package gate

import (
	"context"
	"errors"
	"time"
)

// Pauses across hosts. With an [etcd] section in the config, the
// command-line pauses (and resume times) live in an etcd cluster, so a
// pause applies to every host (README, "Across hosts (etcd)"). This
// package links no etcd client: cron-gate-etcd sets Config.Shared to a
// store (package etcdpause), and the run path, Status and
// gateconf.Pause/Resume consult it beside the local pauses.json.

// SharedPauses is a pause store that several hosts share. Every method
// returns in bounded time (the store's timeout); an error that means the
// store could not be reached wraps ErrCoordinatorDown.
type SharedPauses interface {
	// Get returns the gate's pause, nil when there is none (or it ended).
	Get(ctx context.Context, gate string) (*Pause, error)
	// List returns every gate's pause; with an error, the pauses it could read.
	List(ctx context.Context) (map[string]Pause, error)
	// Set pauses a gate (replacing an earlier pause).
	Set(ctx context.Context, gate string, p Pause) error
	// Clear lifts the gate's pause and records the resume; had tells
	// whether there was one.
	Clear(ctx context.Context, gate string) (had bool, err error)
	// Resumes returns when each gate was last resumed.
	Resumes(ctx context.Context) (map[string]time.Time, error)
}

// ErrCoordinatorDown is wrapped by a SharedPauses error that means the
// store could not be reached: the pause state is unknown.
var ErrCoordinatorDown = errors.New("etcd unavailable")

// ReasonCoordinatorDown is the skip reason of a run whose shared pause
// state could not be read (fail closed; on_coordinator_down = "skip").
const ReasonCoordinatorDown = "coordinator_down"

// EtcdConfig is the `[etcd]` table: where the shared pauses live. It is
// "set" when it names endpoints.
type EtcdConfig struct {
	Endpoints []string      // `endpoints`: client URLs of every member
	Prefix    string        // `prefix`: key prefix, "" for the default ("/cron-gate")
	Timeout   time.Duration // `timeout`: per call, retries included; 0 for the default
	RunOnDown bool          // `on_coordinator_down = "run"`; false is "skip" (fail closed)
}

// DefaultEtcdTimeout is `timeout` when not set.
const DefaultEtcdTimeout = 5 * time.Second

// Set reports whether the config names a cluster.
func (e *EtcdConfig) Set() bool { return len(e.Endpoints) > 0 }

// TimeoutOr returns timeout or its default.
func (e *EtcdConfig) TimeoutOr() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultEtcdTimeout
}

// mergeShared merges shared pauses into the local ones: where both have a
// gate, the active one wins, the shared one if both are.
func mergeShared(local, shared map[string]Pause, now time.Time) map[string]Pause {
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
