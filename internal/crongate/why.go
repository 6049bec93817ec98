//go:build linux

package crongate

// cron-gate why NAME: in words, the gate's last attempts, what stops it
// now and when cron next tries (docs/cron-gate.md, "Why"). It judges
// nothing itself: the state, the run of skips and their holders come from
// gate.Status; it adds what is true now of the things a run would look at
// (the pause, the legacy files, the shared pauses) and the crontab.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/cronexpr"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// WhyCmd is `cron-gate why NAME`.
type WhyCmd struct {
	Name string `arg:"" help:"Gate name."`
	JSON bool   `help:"Print the documented JSON instead of words."`
}

// Run is `cron-gate why`.
func (c *WhyCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(why(cfg, e.ps, c, os.Stdout, e.out, time.Now()))
}

// Kinds of blocker.
const (
	blockPaused      = "paused"
	blockLegacyLock  = journal.ReasonLegacyLock
	blockPidfile     = journal.ReasonLegacyPidfile
	blockBusy        = journal.ReasonBusy
	blockCoordinator = journal.ReasonCoordinatorDown
	blockDone        = journal.ReasonDone // once_per: this period's run succeeded
	blockClaim       = gate.LockClaim     // once_per: the period claim is held now
	blockError       = "error"            // the last attempt could not start
	blockUnscheduled = "unscheduled"      // nothing runs the gate
)

// WhyReport is `cron-gate why NAME --json` (schema v 1).
type WhyReport struct {
	V         int               `json:"v"`
	Generated time.Time         `json:"generated"`
	Verdict   string            `json:"verdict"`  // the state, in one line
	Blockers  []Blocker         `json:"blockers"` // what would stop a run now; none: the next try should run
	Next      *NextTry          `json:"next,omitempty"`
	Attempts  []journal.Attempt `json:"attempts"` // the last attempts, newest first
	Gate      gate.GateStatus   `json:"gate"`     // as cron-gate status --json has it
	// HeldBy are who held the locks of the last attempt, a busy or
	// legacy skip, when it was skipped (journal.Record.HeldBy): a
	// cron-gate run's {gate, run}, or a process's pid (and command where
	// /proc shows it to all). HeldByMore more were not recorded.
	HeldBy     []journal.HeldBy `json:"held_by,omitempty"`
	HeldByMore int              `json:"held_by_more,omitempty"`
	Warnings   []string         `json:"warnings,omitempty"`

	zone *time.Location // the gate's (time_zone), for the times printed
}

// Blocker is one thing that would stop the gate's next run.
type Blocker struct {
	Kind  string           `json:"kind"` // paused, legacy_lock, legacy_pidfile, busy, coordinator_down, done, error, unscheduled
	Text  string           `json:"text"`
	Locks []gate.LockState `json:"locks,omitempty"`
}

// NextTry is when cron next runs the gate's line.
type NextTry struct {
	Time  time.Time `json:"time,omitzero"` // zero: the schedule never fires (or @reboot)
	Expr  string    `json:"expr"`
	Line  int       `json:"line"`
	Where string    `json:"where"` // what was read: "crontab -l", files
	Timer string    `json:"timer,omitempty"`
	// JitterMS is the gate's jitter offset on this host, included in
	// Time: when the command is expected to start.
	JitterMS int64 `json:"jitter_ms,omitempty"`
}

func why(cfg *gate.Config, ps gate.Pauses, c *WhyCmd, w io.Writer, out *safetext.Printer, now time.Time) int {
	if err := gate.CheckName(c.Name); err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	if err := CheckKnown(cfg, ps, c.Name); err != nil {
		if u, ok := errors.AsType[*UnknownGateError](err); ok {
			out.Errorf("why %s: %s", c.Name, u.What())
			return runner.ExitFailure
		}
	}
	rep, err := gate.Status(cfg, ps, now, c.Name)
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	r := &WhyReport{V: 1, Generated: now, Gate: rep.Gates[0], Warnings: rep.Warnings, Blockers: []Blocker{}, Attempts: []journal.Attempt{}}
	g, gc := &r.Gate, cfg.Gate(c.Name)
	r.zone = gc.Location()
	for i := len(g.Recent) - 1; i >= 0; i-- {
		r.Attempts = append(r.Attempts, g.Recent[i])
	}
	r.Verdict = verdict(g, now)
	if k, a := g.Skipping, g.LastAttempt; k != nil && a != nil && a.Outcome == journal.OutcomeSkipped {
		r.HeldBy, r.HeldByMore = a.HeldBy, a.HeldByMore
	}
	r.Blockers = blockers(cfg, g, gc, rep.Warnings)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, unscheduled, warns := nextTry(ctx, cfg, gc, now)
	if host, _ := os.Hostname(); next != nil && !next.Time.IsZero() {
		if j := gate.JitterOf(gc, g, host); j > 0 {
			next.Time, next.JitterMS = next.Time.Add(j), j.Milliseconds()
		}
	}
	r.Next = next
	r.Warnings = append(r.Warnings, warns...)
	if unscheduled != "" {
		r.Blockers = append(r.Blockers, Blocker{Kind: blockUnscheduled, Text: unscheduled})
	}
	if c.JSON {
		if err := printJSON(w, r); err != nil {
			out.Errorf("%v", err)
			return runner.ExitFailure
		}
		return 0
	}
	for _, wn := range r.Warnings {
		out.Warnf("%s", wn)
	}
	r.print(w, now)
	return 0
}

// verdict says the gate's state in one line.
func verdict(g *gate.GateStatus, now time.Time) string {
	at := func(t time.Time) string { return stamp(t) + " (" + ago(now.Sub(t)) + ")" }
	s := fmt.Sprintf("gate %s: %s", g.Name, g.State)
	switch g.State {
	case gate.StateRunning:
		r := g.Running[0]
		s += fmt.Sprintf(": a run has been in progress since %s", at(r.Since))
		if g.Overrun {
			s += fmt.Sprintf(", longer than max_runtime %s (overrun)", g.MaxRuntime)
		}
	case gate.StateWaiting:
		w := g.Waiting[0]
		s += fmt.Sprintf(": a run has been waiting its jitter since %s; its command starts at %s", at(w.Since), stampSec(w.Until))
		if d := w.Until.Sub(now).Round(time.Second); d > 0 {
			s += fmt.Sprintf(" (in %s)", d)
		}
	case gate.StatePaused:
		s += ": " + gate.DescribePause(g.Pause)
	case gate.StateError:
		e := g.LastError
		s += fmt.Sprintf(": the last attempt could not start (%s) at %s: %s", e.Reason, at(e.Time), e.Detail)
	case gate.StateFailing:
		s += ": " + strings.TrimPrefix(watch.DescribeEnd(g.LastEnd), "the last run ended: ")
		if g.ConsecutiveFailures > 1 {
			s += fmt.Sprintf(" (%d failures in a row)", g.ConsecutiveFailures)
		}
	case gate.StateBlocked, gate.StateSkipped:
		k := g.Skipping
		if k.Skips == 1 {
			s += fmt.Sprintf(": the last attempt was skipped (%s) at %s", k.Reason, at(k.Last))
		} else {
			s += fmt.Sprintf(": skipped %d times in a row (%s) since %s, last at %s", k.Skips, k.Reason, at(k.Since), stamp(k.Last))
		}
	case gate.StateOK:
		s += ": the last attempt ran and succeeded at " + at(g.LastEnd.Time)
	case gate.StateDone:
		s += fmt.Sprintf(": this period's run succeeded at %s (once_per %s); the next period begins %s", at(g.LastEnd.Time), g.OncePer, stampIn(g.PeriodEnd))
	case gate.StateNeverRun:
		s += ": it has never run"
	}
	if g.State != gate.StateBlocked && g.Blocked() {
		s += fmt.Sprintf("; and it is blocked: skipped %d times in a row (%s) since %s", g.Skipping.Skips, g.Skipping.Reason, stamp(g.Skipping.Since))
	}
	return s
}

// blockers says what would stop a run now, in the order a run looks:
// the pause, the shared pauses, a period done (once_per), the legacy files, then what the last
// attempts found (the locks of a busy skip, looked up now).
func blockers(cfg *gate.Config, g *gate.GateStatus, gc *gate.GateConfig, warnings []string) []Blocker {
	var out []Blocker
	if g.Pause != nil {
		text := gate.DescribePause(g.Pause)
		if g.Pause.By == "config" {
			text += "; cron-gate resume " + g.Name + " lifts it (it edits the config)"
		} else {
			text += "; cron-gate resume " + g.Name + " lifts it"
		}
		if g.Pause.Since.IsZero() {
			out = append(out, Blocker{Kind: blockPaused, Text: text})
		} else {
			out = append(out, Blocker{Kind: blockPaused, Text: text + " (since " + stamp(g.Pause.Since) + ")"})
		}
	}
	if cfg.Etcd.Set() && !cfg.Etcd.RunOnDown {
		for _, w := range warnings {
			if strings.HasPrefix(w, "shared pauses (etcd)") {
				out = append(out, Blocker{Kind: blockCoordinator, Text: "the shared pauses cannot be read now (" + w + "); a run skips until they can (on_coordinator_down = \"skip\")"})
			}
		}
	}
	if g.PeriodDone {
		out = append(out, Blocker{Kind: blockDone, Text: fmt.Sprintf("once_per %s: a run of this period (from %s) succeeded at %s; a run skips until %s",
			g.OncePer, stampIn(g.PeriodStart), stamp(g.LastSuccess.Time), stampIn(g.PeriodEnd))})
	}
	if c := g.PeriodClaim; c != nil {
		text := fmt.Sprintf("once_per %s: %s; a run of this period skips while it is held", g.OncePer, c.String())
		if len(g.Running) == 0 {
			text += " (no run of the gate is recorded as running: the holder may be stuck)"
		}
		out = append(out, Blocker{Kind: blockClaim, Text: text, Locks: []gate.LockState{*c}})
	}
	var locks, pids []gate.LockState
	for _, ls := range gate.LegacyNow(gc) {
		if ls.State == gate.LockFree {
			continue
		}
		if ls.Kind == gate.LockPidfile {
			pids = append(pids, ls)
		} else {
			locks = append(locks, ls)
		}
	}
	if len(locks) > 0 {
		out = append(out, Blocker{Kind: blockLegacyLock, Text: lockWords(locks), Locks: locks})
	}
	if len(pids) > 0 {
		out = append(out, Blocker{Kind: blockPidfile, Text: lockWords(pids), Locks: pids})
	}
	if k := g.Skipping; k != nil && k.Reason == journal.ReasonBusy {
		if held := k.Holding(); len(held) > 0 {
			out = append(out, Blocker{Kind: blockBusy, Text: "withlock found its locks busy; now: " + lockWords(held), Locks: held})
		} else {
			out = append(out, Blocker{Kind: blockBusy, Text: "withlock found its locks busy at the last attempt; now: " + k.Words()})
		}
	}
	if g.LastAttemptErred() {
		e := g.LastError
		out = append(out, Blocker{Kind: blockError, Text: fmt.Sprintf("the last attempt could not start (%s): %s", e.Reason, e.Detail)})
	}
	return out
}

// heldByWords says who held the last skip's locks then: "held by gate X
// run R (see the dashboard's timeline: /#run-X-R)" or "held by pid N
// (command), not a cron-gate run".
func heldByWords(h journal.HeldBy) string {
	if h.Gate != "" && h.Run != "" {
		return fmt.Sprintf("held by gate %s run %s (see the dashboard's timeline: /#run-%s-%s)", h.Gate, h.Run, h.Gate, h.Run)
	}
	s := fmt.Sprintf("held by pid %d", h.Pid)
	if h.Command != "" {
		s += " (" + h.Command + ")"
	}
	return s + " at the last skip, not a cron-gate run"
}

func lockWords(ls []gate.LockState) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, "; ")
}

// nextTry finds when cron next runs the gate: the earliest next time of
// the crontab lines that run it (in cron's zone, the system's). A gate
// with systemd_timer is run by its timer: the crontab is not read. It
// also says when nothing runs the gate (unscheduled), and a warning when
// the crontab could not be read.
func nextTry(ctx context.Context, cfg *gate.Config, gc *gate.GateConfig, now time.Time) (next *NextTry, unscheduled string, warns []string) {
	warn := func(s string) []string {
		if s == "" {
			return warns
		}
		return append(warns, s)
	}
	if gc.SystemdTimer != "" {
		p := watch.NewSystemProbe(cfg.Check)
		active, state, err := p.TimerState(ctx, gc.SystemdTimer)
		switch {
		case err != nil:
			return &NextTry{Timer: gc.SystemdTimer}, "", warn(fmt.Sprintf("systemd timer %s: %v", gc.SystemdTimer, err))
		case !active:
			return &NextTry{Timer: gc.SystemdTimer}, fmt.Sprintf("systemd timer %s is %s, not active", gc.SystemdTimer, state), nil
		}
		return &NextTry{Timer: gc.SystemdTimer}, "", nil
	}
	scan, err := watch.NewSystemProbe(cfg.Check).Crontabs(ctx)
	if err != nil {
		return nil, "", warn("crontab: " + err.Error())
	}
	if scan == nil {
		return nil, "", nil
	}
	runs, ignored := scan.Find(gc.Name)
	if len(runs) == 0 {
		switch {
		case len(scan.Unreadable) > 0:
			return nil, "", warn(fmt.Sprintf("no cron-gate %s line in %s, but cron may read what could not be read here: %s", gc.Name, scan.Where, strings.Join(scan.Unreadable, "; ")))
		case len(ignored) > 0:
			return nil, fmt.Sprintf("cron does not run its line %s: %s", ignored[0].Where(), ignored[0].Rejected), nil
		}
		return nil, fmt.Sprintf("no cron-gate %s line in %s", gc.Name, scan.Where), nil
	}
	loc, _ := cronZone(systemZoneFile)
	for _, j := range runs {
		if j.CronTZ != "" {
			warns = warn(fmt.Sprintf("%s runs under CRON_TZ=%s, which Debian's cron does not read (cron(8): one time zone for every job): its next runs are computed in cron's zone, %s", j.Where(), j.CronTZ, loc))
		}
		s, err := cronexpr.Parse(j.Schedule)
		if err != nil {
			continue
		}
		t := s.Next(now, loc)
		if next == nil || (!t.IsZero() && (next.Time.IsZero() || t.Before(next.Time))) {
			next = &NextTry{Time: t, Expr: j.Schedule, Line: j.Line, Where: j.Source}
		}
	}
	if next == nil {
		j := runs[0]
		return &NextTry{Expr: j.Schedule, Line: j.Line, Where: j.Source}, "", warn(fmt.Sprintf("%s: cron-gate cannot read the schedule %q", j.Where(), j.Schedule))
	}
	return next, "", warns
}

// stamp is a time for people: local, to the minute, with the zone.
func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04 MST") }

// stampSec is stamp to the second (a jitter's start).
func stampSec(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") }

// stampIn is stamp in t's own zone (a gate's time_zone).
func stampIn(t time.Time) string { return t.Format("2006-01-02 15:04 MST") }

// print writes the report for people; every line goes through cell.
func (r *WhyReport) print(w io.Writer, now time.Time) {
	line := func(format string, args ...any) { fmt.Fprintln(w, cell(fmt.Sprintf(format, args...))) }
	line("%s", r.Verdict)
	for _, h := range r.HeldBy {
		line("  %s", heldByWords(h))
	}
	if r.HeldByMore > 0 {
		line("  and %d more holder(s)", r.HeldByMore)
	}
	g := &r.Gate
	if k := g.Skipping; k != nil && k.Reason != journal.ReasonBusy {
		if k.Note != "" && len(k.Locks) == 0 {
			line("  %s", k.Note)
		}
	}
	if len(r.Blockers) == 0 {
		line("now: nothing would stop a run")
	} else {
		line("now:")
		for _, b := range r.Blockers {
			line("  %s: %s", b.Kind, b.Text)
		}
	}
	switch n := r.Next; {
	case n == nil:
	case n.Timer != "":
		line("next try: by systemd timer %s (systemctl list-timers %s)", n.Timer, n.Timer)
	case n.Time.IsZero():
		line("next try: never by cron (%s:%d: %s)", n.Where, n.Line, n.Expr)
	default:
		s := fmt.Sprintf("next try: %s (in %s), %s:%d: %s", stampIn(n.Time.In(r.zone)), runner.ShortDuration(n.Time.Sub(now)), n.Where, n.Line, n.Expr)
		if n.JitterMS > 0 {
			s += fmt.Sprintf(", after a jitter of %s", runner.ShortDuration(time.Duration(n.JitterMS)*time.Millisecond))
		}
		if len(r.Blockers) > 0 {
			s += "; it will be skipped unless that changes"
		}
		line("%s", s)
	}
	if len(r.Attempts) > 0 {
		line("last attempts, newest first:")
		for _, a := range r.Attempts {
			s := fmt.Sprintf("  %s  %-8s", stamp(a.Time), a.Outcome)
			if a.Reason != "" {
				s += "  " + a.Reason
			}
			if a.Exit != nil {
				s += fmt.Sprintf("  exit %d", *a.Exit)
			}
			if a.DurationMS > 0 {
				s += "  " + runner.ShortDuration(time.Duration(a.DurationMS)*time.Millisecond)
			}
			line("%s", s)
		}
	}
	if g.LastSuccess != nil {
		line("last success: %s (%s)", stamp(g.LastSuccess.Time), ago(now.Sub(g.LastSuccess.Time)))
	} else {
		line("last success: never")
	}
}
