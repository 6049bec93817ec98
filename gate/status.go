//go:build linux

package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
)

// Gate states, from most to least pressing. The status view, the watchdog
// and the dashboard all take a gate's state from GateStatus: the judgement
// is made here once.
const (
	StateRunning  = "running"   // a run has started and not ended
	StateWaiting  = "waiting"   // a run waits its jitter before starting its command (Waiting says until when)
	StatePaused   = "paused"    // paused by config or command line
	StateError    = "error"     // the last attempt failed before running (bad config, bad state)
	StateFailing  = "failing"   // the last run ended badly (failure, timeout, signal, vanished)
	StateBlocked  = "blocked"   // its recent attempts were all skips (Skipping's rule)
	StateSkipped  = "skipped"   // its last attempt was skipped (busy, legacy lock...), not yet blocked
	StateDone     = "done"      // once_per: its last attempt succeeded in the current period, which needs no other run
	StateOK       = "ok"        // its last attempt ran and succeeded
	StateNeverRun = "never-run" // it never ran nor tried (no record, or only paused skips)
)

// GateStatus is one gate in the status report (JSON schema v1, docs/cron-gate.md, "Status").
type GateStatus struct {
	Name     string            `json:"name"`
	Declared bool              `json:"declared"`
	State    string            `json:"state"`
	Pause    *Pause            `json:"pause,omitempty"`
	Interval string            `json:"interval,omitempty"`
	Running  []journal.Running `json:"running,omitempty"`
	// Waiting are the runs waiting their jitter, oldest first: Until is
	// when each one's command is due to start.
	Waiting []journal.Running `json:"waiting,omitempty"`
	journal.Digest
	JournalError string `json:"journal_error,omitempty"`
	// ResumedAt is when the gate was last resumed (cron-gate resume, or
	// the expiry of a command-line pause), zero if unknown.
	ResumedAt time.Time `json:"resumed_at,omitzero"`
	// Skipping is the gate's current run of skips and what holds it back
	// now (blocked.go); nil when its last attempt was not a skip.
	Skipping *Skipping `json:"skipping,omitempty"`
	// MaxRuntime is the gate's max_runtime; Overrun, that a run in
	// progress has run longer than it at the report's time.
	MaxRuntime string `json:"max_runtime,omitempty"`
	Overrun    bool   `json:"overrun,omitempty"`
	// OncePer is the gate's once_per; PeriodStart and PeriodEnd bound
	// its current period at the report's time, and PeriodDone says that
	// a run called in it succeeded (docs/cron-gate.md, "Once per period").
	OncePer     string    `json:"once_per,omitempty"`
	PeriodStart time.Time `json:"period_start,omitzero"`
	PeriodEnd   time.Time `json:"period_end,omitzero"`
	PeriodDone  bool      `json:"period_done,omitempty"`
	// PeriodClaim is the gate's period claim (once_per) when a process
	// holds it now, with its holders, looked up in /proc/locks: the run
	// of this period in progress, or a process stuck with it, while which
	// every other run of the period skips. Nil when it is free.
	PeriodClaim *LockState `json:"period_claim,omitempty"`
}

// Report is the whole status: what `cron-gate status --json` prints.
type Report struct {
	V         int          `json:"v"`
	Generated time.Time    `json:"generated"`
	Config    string       `json:"config,omitempty"` // absolute; absent when no file was read
	StateDir  string       `json:"state_dir"`
	Gates     []GateStatus `json:"gates"`
	Warnings  []string     `json:"warnings"` // always present: [] when none
}

// Status builds the report for the named gates, or for every gate the
// config declares, the pauses name or the state dir has records of. ps
// are the config's pause stores (Pauses.For). It only reads: it creates
// and locks nothing, so it can run as another user. Pauses or journals
// that cannot be read are warnings in the report, not errors.
//
// The holders of what blocks a gate are looked up from one reading of
// /proc/locks, made only if some gate's last attempt was skipped, however
// many gates are.
func Status(cfg *Config, ps Pauses, now time.Time, names ...string) (*Report, error) {
	stateDir := StateDirFor(cfg)
	r := &Report{V: 1, Generated: now, Config: absPath(cfg.Path), StateDir: stateDir, Warnings: []string{}}
	// Read only, through one descriptor of the state dir, whoever owns
	// it: a status view may run as another user.
	jr, jrErr := journal.NewReader(stateDir)
	if jr != nil {
		defer jr.Close()
	}
	v := r.readPauses(cfg, ps.For(cfg), now)
	if len(names) == 0 {
		names = r.gateNames(cfg, v.all, jr, jrErr)
	}
	var look lookup
	for _, n := range names {
		st := gateStatus(cfg, jr, n, v.all, now, &look)
		st.ResumedAt = v.resumedAt(n, now)
		r.Gates = append(r.Gates, st)
	}
	return r, nil
}

// pauseView is what the status shows of the command-line pauses.
type pauseView struct {
	all     map[string]Pause     // this host's and the shared ones, merged (MergePauses)
	local   map[string]Pause     // this host's
	resumed map[string]time.Time // recorded resumes, the later of this host's and the shared store's
}

// readPauses reads the pauses and the recorded resumes from ps; what
// cannot be read is a warning.
func (r *Report) readPauses(cfg *Config, ps Pauses, now time.Time) pauseView {
	var v pauseView
	local, err := ps.Local.List(context.Background())
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	} else {
		v.local = local
		v.resumed, _ = ps.Local.Resumes(context.Background())
	}
	v.all = v.local
	if ps.Shared == nil {
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
	defer cancel()
	shared, err := ps.Shared.List(ctx)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("shared pauses (etcd): %v; gates paused from another host may not show as paused", err))
	}
	v.all = MergePauses(v.local, shared, now)
	if res, err := ps.Shared.Resumes(ctx); err == nil {
		v.resumed = later(v.resumed, res)
	}
	return v
}

// later merges two maps of times, keeping the later one of each key.
func later(a, b map[string]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(a)+len(b))
	for k, t := range a {
		out[k] = t
	}
	for k, t := range b {
		if t.After(out[k]) {
			out[k] = t
		}
	}
	return out
}

// resumedAt returns when gate was last resumed, as far as the pauses
// know at now: the recorded resume, or the end of an expired command-line
// pause of this host, whichever is later; zero if neither.
func (v pauseView) resumedAt(gate string, now time.Time) time.Time {
	t := v.resumed[gate]
	if p, ok := v.local[gate]; ok && !p.Until.IsZero() && !p.Until.After(now) && p.Until.After(t) {
		t = p.Until
	}
	return t
}

// gateNames names every gate the config declares, the pauses name (paused
// ahead of its first run) or the state dir has a directory of, sorted.
func (r *Report) gateNames(cfg *Config, paused map[string]Pause, jr *journal.Reader, jrErr error) []string {
	seen := map[string]bool{}
	for n := range cfg.Gates {
		seen[n] = true
	}
	for n := range paused {
		if CheckName(n) == nil {
			seen[n] = true
		}
	}
	gates, err := gateDirs(jr, jrErr)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("state dir %s: %v", r.StateDir, safeopen.Cause(err)))
	}
	for _, n := range gates {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// gateDirs lists the gates that have a directory in the state dir (jr
// nil: it could not be opened, jrErr says why).
func gateDirs(jr *journal.Reader, jrErr error) ([]string, error) {
	if jr == nil {
		if errors.Is(jrErr, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, jrErr
	}
	dirs, err := jr.Gates()
	var out []string
	for _, n := range dirs {
		if CheckName(n) == nil {
			out = append(out, n)
		}
	}
	return out, err
}

func gateStatus(cfg *Config, jr *journal.Reader, name string, paused map[string]Pause, now time.Time, look *lookup) GateStatus {
	g := cfg.Gate(name)
	_, declared := cfg.Gates[name]
	var cmd *Pause
	if p, ok := paused[name]; ok {
		cmd = &p
	}
	st := GateStatus{Name: name, Declared: declared, Pause: PauseOf(g, cmd, now)}
	if g.Interval > 0 {
		st.Interval = runner.FormatDuration(g.Interval)
	}
	s, err := readSummary(jr, name)
	if err != nil {
		st.JournalError = err.Error()
	}
	// A run whose cron-gate has died is judged vanished here too, without
	// writing: the next run of the gate records it.
	s.ReapVanished(now)
	for _, r := range s.Running {
		st.Running = append(st.Running, r)
	}
	sort.Slice(st.Running, func(a, b int) bool { return st.Running[a].Since.Before(st.Running[b].Since) })
	for _, r := range s.Waiting {
		st.Waiting = append(st.Waiting, r)
	}
	sort.Slice(st.Waiting, func(a, b int) bool { return st.Waiting[a].Since.Before(st.Waiting[b].Since) })
	st.Digest = s.Digest
	st.Skipping = look.skipping(g, &st.Digest)
	if g.MaxRuntime > 0 {
		st.MaxRuntime = runner.FormatDuration(g.MaxRuntime)
		for _, r := range st.Running {
			st.Overrun = st.Overrun || now.Sub(r.Since) > g.MaxRuntime
		}
	}
	if p, ok := PeriodOf(oncePerOf(g, &st), now, g.Location()); ok {
		st.OncePer, st.PeriodStart, st.PeriodEnd = p.Per, p.Start, p.End
		st.PeriodDone = st.LastSuccess != nil && SucceededIn(st.LastSuccess, p)
		st.PeriodClaim = look.periodClaim(jr, name)
	}
	st.State = judge(&st)
	return st
}

// oncePerOf is the gate's once_per: the config's, else the one its latest
// recorded call was held to (the run form's --once-per), so that a gate
// set up on its crontab line alone is judged done too.
func oncePerOf(g *GateConfig, st *GateStatus) string {
	if g.OncePer != "" {
		return g.OncePer
	}
	var last *journal.Event
	for _, e := range []*journal.Event{st.LastStart, st.LastSkip, st.LastEnd} {
		if e != nil && (last == nil || e.Time.After(last.Time)) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return last.OncePer
}

// readSummary reads the gate's summary through jr (nil: no state dir);
// err says what is wrong with the journal, if anything, and the summary
// is then what could be read.
func readSummary(jr *journal.Reader, name string) (*journal.Summary, error) {
	if jr == nil || CheckName(name) != nil {
		return &journal.Summary{}, nil
	}
	j, err := jr.Journal(name)
	if err != nil || j == nil {
		return &journal.Summary{}, err
	}
	defer j.Close()
	s, err := j.Summary()
	if err != nil {
		return s, err
	}
	return s, s.Problem()
}

// LastAttemptErred reports whether the gate's last attempt could not start
// (an error record, config or state, after the last end in the journal). judge and
// the watchdog share it.
func (st *GateStatus) LastAttemptErred() bool {
	// By journal order (Digest.ErrorIsLatest), not by timestamps: a clock
	// stepped back must not let an old error outrank a newer success.
	return st.LastError != nil && st.ErrorIsLatest
}

// LastRunFailed reports whether the gate's last finished run ended badly
// (failure, timeout, signal, start error or vanished), whatever runs now.
// judge and the watchdog share it.
func (st *GateStatus) LastRunFailed() bool {
	return st.LastEnd != nil && st.LastEnd.Outcome != journal.OutcomeSuccess
}

// judge names the gate's state from its status, most pressing first. ok
// means the last attempt ran and succeeded: a gate whose last attempt was
// skipped is skipped, or blocked once Skipping's rule holds. A paused
// skip is not an attempt, so a resumed gate is judged by what it did
// before it was paused. A gate with once_per whose last run succeeded in
// the current period is done: as ok, and nothing to do until the next.
func judge(st *GateStatus) string {
	switch {
	case len(st.Running) > 0:
		return StateRunning
	case len(st.Waiting) > 0:
		// Its pauses, once_per and legacy files were checked before the
		// wait: the command starts at Until.
		return StateWaiting
	case st.Pause != nil:
		return StatePaused
	case st.LastAttemptErred():
		return StateError
	case st.LastRunFailed():
		return StateFailing
	case st.Blocked():
		return StateBlocked
	case st.Skipping != nil:
		return StateSkipped
	case st.LastEnd != nil && st.PeriodDone && st.LastEnd.Outcome == journal.OutcomeSuccess:
		return StateDone
	case st.LastEnd != nil:
		return StateOK
	}
	return StateNeverRun
}

// absPath is path made absolute for a report ("" stays ""): a config named
// relative to the caller's directory means nothing to a script reading
// the JSON elsewhere.
func absPath(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
