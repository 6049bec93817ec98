//go:build linux

package watch

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Watched returns the conditions the watchdog judges for a gate of the
// status report, from the config alone:
//
//   - failed and skipping: every gate (declared, or with records);
//   - stale: gates with an interval, or with once_per "1h", "1d" or "1w"
//     (the period's length is then the interval: GateConfig.StaleInterval);
//   - overrun: gates with a max_runtime;
//   - unscheduled: declared gates with an interval or a systemd_timer;
//     with a timer, the timer must be active; else the gate must be run
//     by a cron-gate line that Debian's cron runs, in the user's crontab
//     or a system crontab (cron_d), and the condition is not watched
//     when none is read (crontab_command = [] and cron_d = []).
//
// A once_per given only on the gate's crontab line (--once-per) counts as
// the config key: the one its latest call was held to (gs.OncePer, from
// the journal), else, before any call, the --once-per of the line that
// runs it (lineOncePer, when the crontab is read; see staleInterval).
func Watched(cfg *gate.Config, gs *gate.GateStatus) []string {
	return WatchedWith(cfg, gs, "")
}

// WatchedWith is Watched for a gate whose crontab line says --once-per
// lineOncePer (LineOncePer of its jobs; "": none, or not read).
func WatchedWith(cfg *gate.Config, gs *gate.GateStatus, lineOncePer string) []string {
	gc := cfg.Gate(gs.Name)
	out := []string{CondFailed, CondSkipping}
	iv := staleInterval(gc, gs, lineOncePer)
	if iv > 0 {
		out = append(out, CondStale)
	}
	if gc.MaxRuntime > 0 {
		out = append(out, CondOverrun)
	}
	if gs.Declared && (iv > 0 || gc.SystemdTimer != "") &&
		(gc.SystemdTimer != "" || len(cfg.Check.CrontabCommandOr()) > 0 || len(cfg.Check.CronDOr()) > 0) {
		out = append(out, CondUnscheduled)
	}
	return out
}

// staleInterval is the interval of the gate's stale rule: its interval,
// else the length of its once_per period (GateConfig.StaleInterval); else
// of the once_per its latest call was held to (gs.OncePer: --once-per on
// its crontab line), else of lineOncePer; 0: not watched for staleness.
func staleInterval(gc *gate.GateConfig, gs *gate.GateStatus, lineOncePer string) time.Duration {
	if iv := gc.StaleInterval(); iv > 0 {
		return iv
	}
	if iv := gate.NominalLength(gs.OncePer); iv > 0 {
		return iv
	}
	return gate.NominalLength(lineOncePer)
}

// lineOncePer is the --once-per of the first crontab line that runs the
// gate, "" when none says one or no crontab is read.
func (o *observer) lineOncePer(name string) string {
	runs, _ := o.crontabs().Find(name)
	return LineOncePer(runs)
}

// LineOncePer is the --once-per of the first of jobs that cron runs,
// "" when none says one.
func LineOncePer(jobs []CrontabJob) string {
	for _, j := range jobs {
		if j.Rejected != "" {
			continue
		}
		for i, f := range j.Flags {
			if v, ok := strings.CutPrefix(f, "--once-per="); ok {
				return v
			}
			if f == "--once-per" && i+1 < len(j.Flags) {
				return j.Flags[i+1]
			}
		}
	}
	return ""
}

// crontabs reads the crontabs once per check (nil when none is read, or
// on an error, which it notes as the probes' warnings).
func (o *observer) crontabs() *CronScan {
	if o.cronDone {
		return o.cron
	}
	o.cronDone = true
	if len(o.cfg.Check.CrontabCommandOr()) == 0 && len(o.cfg.Check.CronDOr()) == 0 {
		return nil
	}
	o.cron, o.cronErr = o.probe.Crontabs(o.ctx)
	if o.cronErr != nil {
		o.warn("crontab", "crontab: "+o.cronErr.Error())
	}
	if o.cron != nil {
		for _, u := range o.cron.Unreadable {
			source, _, _ := strings.Cut(u, ": ")
			o.warn("crontab "+source, "crontab "+u)
		}
	}
	return o.cron
}

// observer judges the conditions of each gate at one check.
type observer struct {
	ctx   context.Context
	cfg   *gate.Config
	probe Probe
	now   time.Time

	cronDone bool
	cron     *CronScan
	cronErr  error
	// probed are the probes' warnings, by what failed ("timer GATE",
	// "crontab", "crontab SOURCE"): Checker.check says each once, when
	// it appears or changes (probeWarnings).
	probed map[string]string
}

// warn notes a probe's warning about key.
func (o *observer) warn(key, msg string) {
	if o.probed == nil {
		o.probed = map[string]string{}
	}
	o.probed[key] = msg
}

// gate observes one gate's watched conditions. It updates the gate's
// FirstSeen and LastPaused in gst.
func (o *observer) gate(gs *gate.GateStatus, gst *GateState) []Observation {
	gc := o.cfg.Gate(gs.Name)
	paused := gs.Pause != nil
	if paused {
		gst.LastPaused = o.now
	}
	var obs []Observation
	add := func(cond, verdict, detail string) {
		// The detail quotes journals and pauses (a run's detail, a
		// pause reason), text that may hold control or bidi characters
		// written by hand: it goes into check.json, the alerts'
		// titles, bodies and environment, and the dashboard, so it is
		// neutralised once, here.
		obs = append(obs, Observation{Gate: gs.Name, Condition: cond, Verdict: verdict, Detail: safetext.Line(detail)})
	}
	line := ""
	if gc.StaleInterval() == 0 && gs.OncePer == "" {
		line = o.lineOncePer(gs.Name)
	}
	iv := staleInterval(gc, gs, line)
	for _, cond := range WatchedWith(o.cfg, gs, line) {
		switch cond {
		case CondStale:
			if gst.FirstSeen.IsZero() {
				gst.FirstSeen = o.now
			}
			v, d, began := o.stale(gs, gc, gst, iv)
			add(cond, v, d)
			obs[len(obs)-1].Began = began
		case CondFailed:
			v, d := o.failed(gs, gc)
			add(cond, v, d)
			if v == Bad {
				obs[len(obs)-1].Output = o.output(gs, gc)
				obs[len(obs)-1].Began = failingSince(gs)
			}
		case CondSkipping:
			v, d := o.skipping(gs, gc)
			add(cond, v, d)
			if v == Bad {
				obs[len(obs)-1].Began = gs.Skipping.Since.Add(gc.SkippingAfterFor())
			}
		case CondOverrun:
			v, d := o.overrun(gs, gc)
			add(cond, v, d)
			if v == Bad {
				obs[len(obs)-1].Began = gs.Running[0].Since.Add(gc.MaxRuntime)
			}
		case CondUnscheduled:
			if paused {
				add(cond, Held, "paused")
				continue
			}
			v, d, watched := o.unscheduled(gs, gc)
			if watched {
				add(cond, v, d)
			}
		}
	}
	return obs
}

// stale: no success for more than stale_factor intervals; or never a
// success, and the watchdog has watched the gate for that long (missing).
// A paused gate is never stale; after a resume, stale is held for one
// interval plus resume_grace.
// iv is the gate's stale interval (staleInterval); began, when bad, is
// when the limit was passed.
func (o *observer) stale(gs *gate.GateStatus, gc *gate.GateConfig, gst *GateState, iv time.Duration) (verdict, detail string, began time.Time) {
	var none time.Time
	if gs.Pause != nil {
		return Held, "paused", none
	}
	limit := time.Duration(o.cfg.Check.StaleFactorOr() * float64(iv))
	resumed := gs.ResumedAt
	if gst.LastPaused.After(resumed) {
		resumed = gst.LastPaused
	}
	if !resumed.IsZero() {
		if until := resumed.Add(iv + o.cfg.Check.ResumeGraceOr()); o.now.Before(until) {
			return Held, fmt.Sprintf("resumed at %s; stale is held until %s", stamp(resumed), stamp(until)), none
		}
	}
	rule := fmt.Sprintf("interval %s, stale after %s", runner.ShortDuration(iv), runner.ShortDuration(limit))
	if gc.Interval == 0 {
		per := gc.OncePer
		if per == "" {
			per = gs.OncePer
		}
		if per == "" {
			per = "--once-per of its crontab line"
		}
		rule = fmt.Sprintf("once_per %s, stale after %s", per, runner.ShortDuration(limit))
	}
	if gs.PeriodDone {
		// The period's run succeeded: nothing is due before it ends.
		return OK, fmt.Sprintf("this period's run succeeded at %s (once_per %s)", stamp(gs.LastSuccess.Time), gs.OncePer), none
	}
	running := ""
	if len(gs.Running) > 0 {
		running = fmt.Sprintf("; a run has been in progress since %s", stamp(gs.Running[0].Since))
	}
	if gs.LastSuccess != nil {
		age := o.now.Sub(gs.LastSuccess.Time)
		if age < 0 {
			// Recorded ahead of now: the clock was stepped back since.
			return OK, fmt.Sprintf("last success at %s, in the future (was the clock stepped back?)", stamp(gs.LastSuccess.Time)), none
		}
		if age > limit {
			return Bad, fmt.Sprintf("no successful run for %s (last success %s; %s)%s", runner.ShortDuration(age), stamp(gs.LastSuccess.Time), rule, running), gs.LastSuccess.Time.Add(limit)
		}
		return OK, fmt.Sprintf("last success %s ago", runner.ShortDuration(age)), none
	}
	if watched := o.now.Sub(gst.FirstSeen); watched > limit {
		return Bad, fmt.Sprintf("missing: no successful run since the watchdog began watching it at %s (%s)%s", stamp(gst.FirstSeen), rule, running), gst.FirstSeen.Add(limit)
	}
	return OK, "no successful run yet; missing after " + stamp(gst.FirstSeen.Add(limit)), none
}

// failed: the last attempt could not start, or the last run ended badly,
// unless the worker reports that failure itself (failure_state_file). Only
// a plain failure (a non-zero exit) can be the worker's own: a run that
// vanished, died of a signal or timed out left no trace of its own.
func (o *observer) failed(gs *gate.GateStatus, gc *gate.GateConfig) (string, string) {
	if gs.Pause != nil {
		return Held, "paused"
	}
	if gs.LastAttemptErred() {
		e := gs.LastError
		return Bad, fmt.Sprintf("the last attempt could not start (%s) at %s: %s", e.Reason, stamp(e.Time), e.Detail)
	}
	if !gs.LastRunFailed() {
		return OK, ""
	}
	e := gs.LastEnd
	desc := DescribeEnd(e)
	if e.Outcome == journal.OutcomeFailure && gc.FailureStateFile != "" {
		if handled, why := o.probe.FailureHandled(gc.FailureStateFile, gc.FailureStateKey); handled {
			return Held, desc + "; the worker reports it itself (" + why + ")"
		} else if why != "" {
			desc += " (" + why + ")"
		}
	}
	return Bad, desc
}

// failingSince is when the gate's current failing streak began: its
// first failed attempt after the last success, as the recent attempts
// show it (skips in between do not end it); zero when the streak is
// older than they reach.
func failingSince(gs *gate.GateStatus) time.Time {
	rec := gs.Recent
	var first time.Time
	for i := len(rec) - 1; i >= 0; i-- {
		switch rec[i].Outcome {
		case journal.OutcomeSuccess:
			return first
		case journal.OutcomeSkipped:
		default:
			first = rec[i].Time
		}
	}
	switch {
	case len(rec) >= journal.RecentAttempts:
		return time.Time{} // it may have begun before them
	case len(rec) > 0:
		return first
	case gs.LastAttemptErred():
		return gs.LastError.Time // no recent attempts kept (an old checkpoint)
	case gs.LastEnd != nil:
		return gs.LastEnd.Time
	}
	return time.Time{}
}

// skipping: the gate is blocked (gate.Skipping's rule) and has been for
// longer than skipping_after (default: its interval; without one, as soon
// as it is blocked). The detail names the reason and what holds the gate
// back now, holder included.
func (o *observer) skipping(gs *gate.GateStatus, gc *gate.GateConfig) (string, string) {
	if gs.Pause != nil {
		return Held, "paused"
	}
	k := gs.Skipping
	if k == nil || !k.Blocked {
		return OK, ""
	}
	limit := gc.SkippingAfterFor()
	blocked := o.now.Sub(k.Since)
	rule := ""
	if limit > 0 {
		rule = ", alert after " + runner.ShortDuration(limit)
	}
	if !gc.CountsAsSkipping(k, o.now) {
		return OK, fmt.Sprintf("blocked for %s (%s)%s", runner.ShortDuration(blocked), k.Reason, rule)
	}
	return Bad, fmt.Sprintf("blocked for %s: skipped %d times in a row since %s (%s)%s; now: %s",
		runner.ShortDuration(blocked), k.Skips, stamp(k.Since), k.Reason, rule, k.Words())
}

// overrun: a run in progress has run longer than max_runtime (the
// status's judgement, gate.GateStatus.Overrun, at the check's time).
func (o *observer) overrun(gs *gate.GateStatus, gc *gate.GateConfig) (string, string) {
	if !gs.Overrun {
		if len(gs.Running) > 0 {
			return OK, fmt.Sprintf("running for %s, max_runtime %s", runner.ShortDuration(o.now.Sub(gs.Running[0].Since)), gs.MaxRuntime)
		}
		return OK, ""
	}
	r := gs.Running[0]
	pid := r.ChildPid
	if pid == 0 {
		pid = r.Pid
	}
	return Bad, fmt.Sprintf("run %s (pid %d) has been running for %s since %s, longer than max_runtime %s",
		r.Run, pid, runner.ShortDuration(o.now.Sub(r.Since)), stamp(r.Since), gs.MaxRuntime)
}

// Bounds of a failure alert's output.
const (
	alertOutputLines = 10
	alertOutputBytes = 2000
)

// output returns the last lines of the failed run's output for its alert:
// with log_output, unless alert_output = false; only when the output
// log's last section is that run's. Each line is neutralised; at most
// alertOutputLines lines and alertOutputBytes bytes.
func (o *observer) output(gs *gate.GateStatus, gc *gate.GateConfig) string {
	e := gs.LastEnd
	if !gc.LogOutput || gc.NoAlertOutput || e == nil || e.Run == "" || gs.LastAttemptErred() {
		return ""
	}
	tail, err := journal.LastOutputTail(gate.StateDirFor(o.cfg), gs.Name, 4*alertOutputBytes)
	if err != nil || !strings.Contains(tail.Header, " "+e.Run+" ") {
		return ""
	}
	lines := strings.Split(strings.TrimRight(tail.Text, "\n"), "\n")
	var out []string
	size := 0
	for i := len(lines) - 1; i >= 0 && len(out) < alertOutputLines; i-- {
		l := strings.TrimRight(lines[i], "\r")
		if strings.HasPrefix(l, "=== cron-gate run ") {
			continue // the log's own markers
		}
		l = safetext.Cut(ansiRE().ReplaceAllString(l, ""), 200)
		if size+len(l)+3 > alertOutputBytes {
			break
		}
		size += len(l) + 3
		out = append(out, "  "+l)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, "\n")
}

// ansiRE matches the terminal escape sequences a command's output holds
// (CSI such as colours, OSC such as titles, and two-byte escapes): an
// alert shows the text, not the codes. What is left unsafe is escaped.
var ansiRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\\\-_]")
})

// DescribeEnd is a finished run for people, as alerts and cron-gate why
// say it: "the last run ended: failure, exit 3 at 2026-11-29 09:10 KST
// after 12s: DETAIL (run RUN)".
func DescribeEnd(e *journal.Event) string {
	s := "the last run ended: " + e.Outcome
	if e.Exit != nil {
		s += fmt.Sprintf(", exit %d", *e.Exit)
	}
	if e.Signal != "" {
		s += ", " + e.Signal
	}
	s += " at " + stamp(e.Time)
	if e.DurationMS > 0 {
		s += " after " + runner.ShortDuration(time.Duration(e.DurationMS)*time.Millisecond)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Run != "" {
		s += " (run " + e.Run + ")"
	}
	return s
}

// unscheduled: the systemd timer is not active, or no cron-gate line that
// Debian's cron runs (CronScan) runs the gate: a line cron ignores (its
// schedule, its file) says why. A probe that fails holds the condition
// (and is a warning), as does a gate found nowhere while some crontab
// could not be read.
func (o *observer) unscheduled(gs *gate.GateStatus, gc *gate.GateConfig) (verdict, detail string, watched bool) {
	if gc.SystemdTimer != "" {
		active, state, err := o.probe.TimerState(o.ctx, gc.SystemdTimer)
		if err != nil {
			o.warn("timer "+gs.Name, fmt.Sprintf("gate %s: systemd timer %s: %v", gs.Name, gc.SystemdTimer, err))
			return Held, "systemd timer unknown: " + err.Error(), true
		}
		if !active {
			return Bad, fmt.Sprintf("systemd timer %s is %s, not active", gc.SystemdTimer, state), true
		}
		return OK, "systemd timer " + gc.SystemdTimer + " is active", true
	}
	o.crontabs()
	if o.cronErr != nil {
		return Held, "crontab unknown: " + o.cronErr.Error(), true
	}
	if o.cron == nil {
		return "", "", false
	}
	runs, ignored := o.cron.Find(gs.Name)
	switch {
	case len(runs) > 0:
		return OK, "in " + runs[0].Where(), true
	case len(o.cron.Unreadable) > 0:
		return Held, fmt.Sprintf("not in %s, but cron may read what could not be read here: %s", o.cron.Where, strings.Join(o.cron.Unreadable, "; ")), true
	case len(ignored) > 0:
		return Bad, fmt.Sprintf("cron does not run its line %s: %s", ignored[0].Where(), ignored[0].Rejected), true
	}
	return Bad, fmt.Sprintf("no cron-gate %s line in %s", gs.Name, o.cron.Where), true
}
