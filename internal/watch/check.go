//go:build linux

package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/statefile"
)

// Checker makes one check. Its zero fields are filled by New; tests set
// their own clock, probe and notifiers.
type Checker struct {
	Config *gate.Config
	// Pauses are the config's pause stores (gate.Pauses.For): the status
	// the check judges shows the pauses of every host with [etcd].
	Pauses    gate.Pauses
	Now       func() time.Time
	Probe     Probe
	Notifiers []Notifier
	Host      string
	// DryRun: decide as a check would, deliver nothing, write nothing.
	DryRun bool
}

// New returns the Checker the config describes, reading the pauses from
// ps.
func New(cfg *gate.Config, ps gate.Pauses, stderr io.Writer) *Checker {
	host, _ := os.Hostname()
	return &Checker{Config: cfg, Pauses: ps, Now: time.Now, Probe: NewSystemProbe(cfg.Check),
		Notifiers: Notifiers(cfg, stderr), Host: host}
}

// Result is what one check saw and did (`cron-gate check --json`, schema
// v1, docs/watchdog.md).
type Result struct {
	V             int               `json:"v"`
	Time          time.Time         `json:"time"`
	DryRun        bool              `json:"dry_run"`
	FirstRun      bool              `json:"first_run"`
	StateFile     string            `json:"state_file"`
	Conditions    []ConditionStatus `json:"conditions"`
	Notifications []*Notification   `json:"notifications"`
	Warnings      []string          `json:"warnings"` // always present: [] when none

	Report *gate.Report `json:"-"` // the status the check judged
	State  *State       `json:"-"` // the state after the check
}

// ConditionStatus is an observation and the condition's state after the
// check.
type ConditionStatus struct {
	Observation
	Count int       `json:"count,omitempty"` // consecutive bad checks
	Since time.Time `json:"since,omitzero"`  // first bad check of the streak
	Muted bool      `json:"muted,omitempty"` // baseline of the first run, not alerted yet
	// KnownAtInstall: bad at the first check, and begun before it; while
	// Muted, RemindAt is when it alerts if it is still bad.
	KnownAtInstall bool      `json:"known_at_install,omitempty"`
	RemindAt       time.Time `json:"remind_at,omitzero"`
	Alerted        bool      `json:"alerted,omitempty"` // an alert went out and no recovery yet
}

// NotifyFailed reports whether a notification could not be delivered to
// some notifier.
func (r *Result) NotifyFailed() bool {
	for _, n := range r.Notifications {
		if len(n.Errors) > 0 {
			return true
		}
	}
	return false
}

// Run makes one check: under the state lock (held from reading the state
// to writing it, notifications included, so that two checks at once
// never alert twice) it reads the state, takes the status, observes every
// gate, steps the state machine, delivers what is due and saves the
// state. An error means the check could not be made (state dir, state
// file); a failed notification is not an error (see Result.NotifyFailed).
func (c *Checker) Run(ctx context.Context) (*Result, error) {
	stateDir := gate.StateDirFor(c.Config)
	path := filepath.Join(stateDir, StateFile)
	if c.DryRun {
		data, err := readStateFile(stateDir)
		if err != nil {
			return nil, err
		}
		res, _, err := c.check(ctx, path, data)
		return res, err
	}
	dir, err := statefile.OpenDir(stateDir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var res *Result
	// Another check holds the lock while it observes and notifies: wait
	// as long as its notifications may take, and a little more.
	wait := statefile.LockWait + ProbeTimeout
	for _, n := range c.Notifiers {
		wait += n.Budget()
	}
	err = statefile.Update(ctx, dir, LockFile, StateFile, MaxStateBytes, wait, statefile.Options{Perm: 0o644}, func(old []byte) ([]byte, error) {
		r, data, err := c.check(ctx, path, old)
		res = r
		return data, err
	})
	if err != nil {
		return nil, stateErr(err)
	}
	return res, nil
}

// check is one check on the state's bytes; it returns the new bytes.
func (c *Checker) check(ctx context.Context, path string, old []byte) (*Result, []byte, error) {
	st, err := parseState(path, old)
	if err != nil {
		return nil, nil, err
	}
	first := st == nil
	if first {
		st = newState()
	}
	now := c.Now()
	rep, err := gate.Status(c.Config, c.Pauses, now)
	if err != nil {
		return nil, nil, err
	}
	rep.HideCommands() // check.json and the dashboard are read by others
	res := &Result{V: 1, Time: now, DryRun: c.DryRun, FirstRun: first, StateFile: path, Report: rep, State: st,
		Conditions: []ConditionStatus{}, Notifications: []*Notification{}, Warnings: []string{}}
	res.Warnings = append(res.Warnings, rep.Warnings...)

	o := &observer{ctx: ctx, cfg: c.Config, probe: c.Probe, now: now}
	var obs []Observation
	for i := range rep.Gates {
		gs := &rep.Gates[i]
		obs = append(obs, o.gate(gs, st.gate(gs.Name))...)
	}
	sortObservations(obs)
	res.Warnings = append(res.Warnings, probeWarnings(st, o.probed)...)

	m := &machine{AlertAfter: c.Config.Check.AlertAfterOr(), Host: c.Host,
		Window: c.Config.Check.CheckIntervalOr(), Remind: c.Config.Check.RemindAfterOr()}
	byID := map[string]Notifier{}
	for _, n := range c.Notifiers {
		if _, dup := byID[n.ID()]; !dup {
			byID[n.ID()] = n
			m.Notifiers = append(m.Notifiers, n.ID())
		}
	}
	notes := m.step(st, obs, now, first)
	if !c.DryRun {
		c.deliver(ctx, notes, byID, now)
		m.settle(st, notes, now)
	}
	res.Notifications = append(res.Notifications, notes...)
	for _, ob := range obs {
		cs := ConditionStatus{Observation: ob}
		if e := st.cond(ob.Gate, ob.Condition); e != nil {
			cs.Count, cs.Since, cs.Muted, cs.KnownAtInstall = e.Count, e.Since, e.Muted, e.KnownAtInstall
			if e.Muted {
				cs.RemindAt = e.RemindAt(m.Remind)
			}
			cs.Alerted = len(e.Alerted) > 0
		}
		res.Conditions = append(res.Conditions, cs)
	}
	st.Updated = now
	st.Checks++
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return nil, nil, err
	}
	return res, append(data, '\n'), nil
}

// deliver sends each notification to the notifiers it is due to, one at a
// time. A notifier that fails is not tried again in this check (its later
// messages fail at once, and are retried at the next check), so a dead
// notifier costs one Budget per check, not one per message.
func (c *Checker) deliver(ctx context.Context, notes []*Notification, byID map[string]Notifier, now time.Time) {
	broken := map[string]error{}
	for _, n := range notes {
		msg := Message{V: 1, Kind: n.Kind, Gate: n.Gate, Condition: n.Condition, Title: n.Title, Body: n.Body,
			Detail: n.Detail, Output: n.Output, Since: n.Since, Time: now, Host: c.Host}
		for _, id := range n.To {
			err := broken[id]
			if err != nil {
				err = fmt.Errorf("not tried: it failed earlier in this check: %v", err)
			} else if err = send(ctx, byID[id], msg); err != nil {
				broken[id] = err
			}
			if err != nil {
				if n.Errors == nil {
					n.Errors = map[string]string{}
				}
				n.Errors[id] = err.Error()
			} else {
				n.Delivered = append(n.Delivered, id)
			}
		}
	}
}

// send runs one Notify, abandoning it after its Budget even if it ignores
// its context.
func send(ctx context.Context, nt Notifier, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, nt.Budget())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- nt.Notify(ctx, m) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("gave up after %v", nt.Budget())
		}
		return fmt.Errorf("stopped: %v", ctx.Err())
	}
}

// ReadState reads the watchdog's state without locking (for `cron-gate
// metrics`); nil when there is none yet.
func ReadState(cfg *gate.Config) (*State, error) {
	stateDir := gate.StateDirFor(cfg)
	data, err := readStateFile(stateDir)
	if data == nil || err != nil {
		return nil, err
	}
	return parseState(filepath.Join(stateDir, StateFile), data)
}

// probeWarnings returns the probes' warnings to say at this check: those
// that are new or changed since the last check said them (a host without
// systemd, whose systemctl fails at every check, is told once, not every
// few minutes by cron's mail), and remembers the current ones in the
// state (probe_warnings), forgetting those that cleared: a warning that
// comes back is said again. Sorted by what failed.
func probeWarnings(st *State, now map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(now) {
		if st.ProbeWarnings[k] != now[k] {
			out = append(out, now[k])
		}
	}
	st.ProbeWarnings = now
	return out
}
