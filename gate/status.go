//go:build linux

package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
)

// Gate states, from most to least pressing. The status view, the watchdog
// and the dashboard all take a gate's state from GateStatus: the judgement
// is made here once.
const (
	StateRunning  = "running"   // a run has started and not ended
	StatePaused   = "paused"    // paused by config or command line
	StateError    = "error"     // the last attempt failed before running (bad config, bad state)
	StateFailing  = "failing"   // the last run ended badly (failure, timeout, signal, vanished)
	StateOK       = "ok"        // the last run succeeded
	StateSkipped  = "skipped"   // it never ran, but it was skipped (busy, legacy lock...)
	StateNeverRun = "never-run" // no record at all
)

// GateStatus is one gate in the status report (JSON schema v1, README).
type GateStatus struct {
	Name     string    `json:"name"`
	Declared bool      `json:"declared"`
	State    string    `json:"state"`
	Pause    *Pause    `json:"pause,omitempty"`
	Interval string    `json:"interval,omitempty"`
	Running  []Running `json:"running,omitempty"`
	Digest
	JournalError string `json:"journal_error,omitempty"`
	// ResumedAt is when the gate was last resumed (cron-gate resume, or
	// the expiry of a command-line pause), zero if unknown (resume.go).
	ResumedAt time.Time `json:"resumed_at,omitzero"`
}

// Report is the whole status: what `cron-gate status --json` prints.
type Report struct {
	V         int          `json:"v"`
	Generated time.Time    `json:"generated"`
	Config    string       `json:"config,omitempty"`
	StateDir  string       `json:"state_dir"`
	Gates     []GateStatus `json:"gates"`
	Warnings  []string     `json:"warnings,omitempty"`
}

// Status builds the report for the named gates, or for every gate the
// config declares or the state dir has records of. It only reads: it
// creates and locks nothing, so it can run as another user.
func Status(cfg *Config, now time.Time, names ...string) (*Report, error) {
	stateDir := StateDirFor(cfg)
	r := &Report{V: 1, Generated: now, Config: cfg.Path, StateDir: stateDir}
	// Read only, through one descriptor of the state dir, whoever owns
	// it (safeopen.TrustAny): a status view may run as another user.
	sd, sdErr := safeopen.OpenDir(stateDir, stateDirOptions(false, true))
	if sd != nil {
		defer sd.Close()
	}
	var pdoc *pauseDoc
	var err error
	if sd != nil {
		pdoc, err = readPauseDocIn(sd)
	} else {
		pdoc, err = readPauseDoc(stateDir)
	}
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error())
		pdoc = &pauseDoc{V: 1, Gates: map[string]Pause{}}
	}
	pauses := pdoc.Gates
	if cfg.Shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
		shared, err := cfg.Shared.List(ctx)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("shared pauses (etcd): %v; gates paused from another host may not show as paused", err))
		}
		pauses = mergeShared(pauses, shared, now)
		if res, err := cfg.Shared.Resumes(ctx); err == nil {
			for g, t := range res {
				if t.After(pdoc.Resumed[g]) {
					if pdoc.Resumed == nil {
						pdoc.Resumed = map[string]time.Time{}
					}
					pdoc.Resumed[g] = t
				}
			}
		}
		cancel()
	}
	if len(names) == 0 {
		seen := map[string]bool{}
		for n := range cfg.Gates {
			seen[n] = true
		}
		for n := range pauses { // paused ahead of its first run
			if CheckName(n) == nil {
				seen[n] = true
			}
		}
		gates, err := gateDirs(sd, sdErr)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("state dir %s: %v", stateDir, safeopen.Cause(err)))
		}
		for _, n := range gates {
			seen[n] = true
		}
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		st := gateStatus(cfg, sd, n, pauses, now)
		st.ResumedAt = resumedAt(pdoc, n, now)
		r.Gates = append(r.Gates, st)
	}
	return r, nil
}

// gateDirs lists the gates that have a directory in the state dir sd
// (nil: it could not be opened, sdErr says why).
func gateDirs(sd *safeopen.Dir, sdErr error) ([]string, error) {
	if sd == nil {
		if errors.Is(sdErr, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, sdErr
	}
	gd, err := sd.OpenDir("gates", stateDirOptions(false, true))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer gd.Close()
	names, err := gd.Names()
	var out []string
	for _, n := range names {
		if st, err := gd.Stat(n); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && CheckName(n) == nil {
			out = append(out, n)
		}
	}
	return out, err
}

func gateStatus(cfg *Config, sd *safeopen.Dir, name string, pauses map[string]Pause, now time.Time) GateStatus {
	g := cfg.Gate(name)
	_, declared := cfg.Gates[name]
	st := GateStatus{Name: name, Declared: declared, Pause: PauseOf(g, pauses, now)}
	if g.Interval > 0 {
		st.Interval = shortDuration(g.Interval)
	}
	s := &Summary{}
	var j *Journal
	var err error
	if sd != nil {
		j, err = readJournalIn(sd, name)
	}
	if err != nil {
		st.JournalError = err.Error()
	} else if j != nil {
		if s, err = j.readSummary(); err != nil {
			st.JournalError = err.Error()
		} else if len(s.problems) > 0 {
			st.JournalError = fmt.Sprintf("%v (%d unreadable record(s) skipped)", s.problems[len(s.problems)-1], len(s.problems))
		} else if s.checkpointErr != nil {
			st.JournalError = s.checkpointErr.Error()
		}
		j.Close()
	}
	// A run whose cron-gate has died is judged vanished here too, without
	// writing: the next run of the gate records it.
	s.reapVanished(now)
	for _, r := range s.Running {
		st.Running = append(st.Running, r)
	}
	sort.Slice(st.Running, func(a, b int) bool { return st.Running[a].Since.Before(st.Running[b].Since) })
	st.Digest = s.Digest
	st.State = judge(&st)
	return st
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
	return st.LastEnd != nil && st.LastEnd.Outcome != OutcomeSuccess
}

// judge names the gate's state from its status, most pressing first.
func judge(st *GateStatus) string {
	switch {
	case len(st.Running) > 0:
		return StateRunning
	case st.Pause != nil:
		return StatePaused
	case st.LastAttemptErred():
		return StateError
	case st.LastRunFailed():
		return StateFailing
	case st.LastEnd != nil:
		return StateOK
	case st.LastSkip != nil:
		return StateSkipped
	}
	return StateNeverRun
}

// shortDuration prints 30m rather than 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	for _, suf := range []string{"m0s", "h0m"} {
		if len(s) > len(suf) && s[len(s)-len(suf):] == suf {
			s = s[:len(s)-len(suf)+1]
		}
	}
	return s
}
