package watch

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
)

// obs returns the observation of one condition in a result.
func obsOf(t *testing.T, res *Result, name, cond string) ConditionStatus {
	t.Helper()
	for _, c := range res.Conditions {
		if c.Gate == name && c.Condition == cond {
			return c
		}
	}
	t.Fatalf("no %s/%s observed in %+v", name, cond, res.Conditions)
	return ConditionStatus{}
}

func noObs(t *testing.T, res *Result, name, cond string) {
	t.Helper()
	for _, c := range res.Conditions {
		if c.Gate == name && c.Condition == cond {
			t.Fatalf("%s/%s observed: %+v", name, cond, c)
		}
	}
}

func TestStaleAfterFactorIntervals(t *testing.T) {
	e := healthy(t, oneGate) // success at t0, interval 30m: stale after 75m
	e.clock.Advance(75 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != OK {
		t.Fatalf("at exactly 2.5 intervals: %+v", o)
	}
	e.clock.Advance(time.Second)
	o := obsOf(t, e.expect(), "job", CondStale)
	if o.Verdict != Bad || !strings.Contains(o.Detail, "no successful run for 1h15m") || !strings.Contains(o.Detail, "stale after 1h15m") {
		t.Fatalf("past 2.5 intervals: %+v", o)
	}
	e.clock.Advance(5 * time.Minute)
	e.expect("alert job/stale")
	e.success("job")
	e.expect("recovery job/stale")
}

func TestStaleFactorConfigurable(t *testing.T) {
	e := healthy(t, "[check]\nstale_factor = 1\n"+oneGate)
	e.clock.Advance(31 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Bad {
		t.Fatalf("stale_factor 1 after 31m: %+v", o)
	}
}

// A gate declared with an interval that never succeeds is missing once the
// watchdog has watched it for stale_factor intervals.
func TestMissing(t *testing.T) {
	e := newEnv(t, oneGate)
	e.expect() // first seen now
	e.clock.Advance(75 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != OK {
		t.Fatalf("missing too early: %+v", o)
	}
	e.clock.Advance(time.Minute)
	o := obsOf(t, e.expect(), "job", CondStale)
	if o.Verdict != Bad || !strings.HasPrefix(o.Detail, "missing:") {
		t.Fatalf("missing: %+v", o)
	}
	// Failing runs are no successes: still missing.
	e.failure("job", 1)
	e.expect("alert job/stale")
}

func TestPausedNeverStale(t *testing.T) {
	e := healthy(t, oneGate)
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), "job", gate.Pause{Reason: "quota", Since: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Hour)
	res := e.expect()
	for _, c := range []string{CondStale, CondFailed} {
		if o := obsOf(t, res, "job", c); o.Verdict != Held {
			t.Fatalf("paused gate: %+v", o)
		}
	}
	e.failure("job", 1) // a paused gate's failure is held too
	e.expect()
	e.expect()
	// Paused in the config: the same.
	e.setConfig("[gates.job]\ninterval = \"30m\"\npaused = true\n")
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Held {
		t.Fatalf("config-paused gate: %+v", o)
	}
}

// After a resume, stale is held for one interval + resume_grace from the
// resume time that `cron-gate resume` records.
func TestResumeGrace(t *testing.T) {
	e := healthy(t, oneGate)
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), "job", gate.Pause{Since: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Hour)
	e.expect()
	// Resumed (as cron-gate resume does) a minute after that check.
	e.clock.Advance(time.Minute)
	resumed := e.clock.Now()
	if _, err := gate.NewPauseFile(e.dir).Clear(context.Background(), "job"); err != nil {
		t.Fatal(err)
	}
	if err := gate.NewPauseFile(e.dir).NoteResumed("job", resumed); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(45*time.Minute - time.Second) // 30m + 15m after the resume
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Held || !strings.Contains(o.Detail, "resumed at") {
		t.Fatalf("inside the grace: %+v", o)
	}
	e.clock.Advance(time.Second)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Bad {
		t.Fatalf("after the grace without a run: %+v", o)
	}
}

func TestResumeGraceConfigurable(t *testing.T) {
	e := healthy(t, "[check]\nresume_grace = \"0s\"\n"+oneGate)
	e.clock.Advance(10 * time.Hour)
	if err := gate.NewPauseFile(e.dir).NoteResumed("job", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Bad {
		t.Fatalf("grace 0 after one interval: %+v", o)
	}
}

// A config pause removed by hand leaves no resume record: the grace runs
// from the last check that saw the gate paused.
func TestResumeGraceFromLastPausedCheck(t *testing.T) {
	e := healthy(t, "[gates.job]\ninterval = \"30m\"\npaused = true\n")
	e.clock.Advance(10 * time.Hour)
	e.expect() // sees it paused
	e.setConfig(oneGate)
	e.clock.Advance(44 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Held {
		t.Fatalf("inside the grace: %+v", o)
	}
	e.clock.Advance(2 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Bad {
		t.Fatalf("after the grace: %+v", o)
	}
}

// A command-line pause that expired by itself resumed at its end.
func TestResumeGraceFromExpiredPause(t *testing.T) {
	e := newEnv(t, oneGate)
	e.success("job")
	e.clock.Advance(10 * time.Hour)
	until := e.clock.Now().Add(-10 * time.Minute)
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), "job", gate.Pause{Since: t0, Until: until}); err != nil {
		t.Fatal(err)
	}
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Held {
		t.Fatalf("10m after the pause expired: %+v", o)
	}
	e.clock.Advance(36 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != Bad {
		t.Fatalf("46m after: %+v", o)
	}
}

func TestStaleNeedsInterval(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	e.failure("job", 1)
	res := e.expect()
	noObs(t, res, "job", CondStale)
	noObs(t, res, "job", CondUnscheduled)
	obsOf(t, res, "job", CondFailed)
}

// A failure the worker reports itself (its state file's flag) is not
// reported again; a failure it could not report (vanished, signal) is.
func TestFailureHandledByWorker(t *testing.T) {
	body := oneGate + "failure_state_file = \"/srv/translate/state.json\"\n"
	e := healthy(t, body)
	if g := e.cfg.Gate("job"); g.FailureStateKey != "failure_notice" {
		t.Fatalf("default key %q", g.FailureStateKey)
	}
	e.probe.handled = map[string]bool{"/srv/translate/state.json": true}
	e.failure("job", 1)
	o := obsOf(t, e.expect(), "job", CondFailed)
	if o.Verdict != Held || !strings.Contains(o.Detail, "the worker reports it itself") {
		t.Fatalf("handled failure: %+v", o)
	}
	e.expect()
	// The flag goes away while it still fails: reported.
	e.probe.handled = nil
	e.expect()
	e.expect("alert job/failed")
}

func TestUnhandledFailuresReported(t *testing.T) {
	body := oneGate + "failure_state_file = \"/srv/s.json\"\n"
	for _, tc := range []struct {
		name string
		rec  func(e *env)
		want string
	}{
		{"vanished", func(e *env) {
			// A start whose cron-gate (pid 0: none) is gone: vanished.
			e.record("job", journal.Record{Event: journal.EventStart, Run: "r1"})
		}, "vanished"},
		{"signal", func(e *env) {
			e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeSignal, Signal: "SIGKILL", Exit: code(137), Started: e.clock.Now()})
		}, "SIGKILL"},
		{"timeout", func(e *env) {
			e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeTimeout, Exit: code(124), Started: e.clock.Now()})
		}, "timeout"},
		{"config error", func(e *env) {
			e.record("job", journal.Record{Event: journal.EventError, Outcome: journal.OutcomeError, Reason: journal.ReasonConfig, Detail: "bad"})
		}, "could not start (config_error)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := healthy(t, body)
			e.probe.handled = map[string]bool{"/srv/s.json": true}
			e.clock.Advance(time.Minute)
			tc.rec(e)
			o := obsOf(t, e.expect(), "job", CondFailed)
			if o.Verdict != Bad || !strings.Contains(o.Detail, tc.want) {
				t.Fatalf("%+v, want bad with %q", o, tc.want)
			}
			e.expect("alert job/failed")
		})
	}
}

func TestUnscheduledCrontab(t *testing.T) {
	e := newEnv(t, oneGate+"[gates.manual]\n")
	e.probe.cron = map[string]bool{"job": true}
	e.success("job")
	res := e.expect()
	if o := obsOf(t, res, "job", CondUnscheduled); o.Verdict != OK {
		t.Fatalf("in the crontab: %+v", o)
	}
	noObs(t, res, "manual", CondUnscheduled) // no interval: not watched
	e.probe.cron = map[string]bool{}
	o := obsOf(t, e.expect(), "job", CondUnscheduled)
	if o.Verdict != Bad || o.Detail != "no cron-gate job line in crontab" {
		t.Fatalf("not in the crontab: %+v", o)
	}
	e.expect("alert job/unscheduled")
	// A line that cron does not run (its schedule, its file) does not
	// count, and the detail says why.
	e.probe.cron = map[string]bool{"job": false}
	o = obsOf(t, e.expect(), "job", CondUnscheduled)
	if o.Verdict != Bad || o.Detail != "cron does not run its line crontab:1: bad minute: the fake says so" {
		t.Fatalf("a line cron ignores: %+v", o)
	}
	// The crontab cannot be read: held, and a warning.
	e.probe.cronErr = errors.New("crontab: exit 2")
	res = e.expect()
	if o := obsOf(t, res, "job", CondUnscheduled); o.Verdict != Held {
		t.Fatalf("crontab unknown: %+v", o)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "exit 2") {
		t.Fatalf("warnings %q", res.Warnings)
	}
	e.probe.cronErr = nil
	e.probe.cron = map[string]bool{"job": true}
	e.expect("recovery job/unscheduled")
	// Paused: not judged.
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), "job", gate.Pause{}); err != nil {
		t.Fatal(err)
	}
	e.probe.cron = map[string]bool{}
	if o := obsOf(t, e.expect(), "job", CondUnscheduled); o.Verdict != Held {
		t.Fatalf("paused: %+v", o)
	}
}

func TestUnscheduledTimer(t *testing.T) {
	e := newEnv(t, "[gates.autopush]\nsystemd_timer = \"blog-autopush.timer\"\n")
	e.probe.cron = map[string]bool{} // the crontab does not matter for a timer gate
	e.probe.timers = map[string]string{"blog-autopush.timer": "active"}
	if o := obsOf(t, e.expect(), "autopush", CondUnscheduled); o.Verdict != OK {
		t.Fatalf("active timer: %+v", o)
	}
	e.probe.timers = map[string]string{"blog-autopush.timer": "inactive"}
	o := obsOf(t, e.expect(), "autopush", CondUnscheduled)
	if o.Verdict != Bad || o.Detail != "systemd timer blog-autopush.timer is inactive, not active" {
		t.Fatalf("inactive timer: %+v", o)
	}
	e.expect("alert autopush/unscheduled")
	e.probe.timerErr = errors.New("systemctl: not found")
	if o := obsOf(t, e.expect(), "autopush", CondUnscheduled); o.Verdict != Held {
		t.Fatalf("systemctl failing: %+v", o)
	}
}

// A last success recorded ahead of now (the clock was stepped back after
// it) is not stale, and no negative duration is printed.
func TestStaleClockSteppedBack(t *testing.T) {
	e := newEnv(t, oneGate)
	e.clock.Advance(time.Hour)
	e.success("job")
	e.clock.Advance(-2 * time.Hour)
	o := obsOf(t, e.expect(), "job", CondStale)
	if o.Verdict != OK || !strings.Contains(o.Detail, "in the future") || regexp.MustCompile(`(^|[\s(])-[0-9]`).MatchString(o.Detail) {
		t.Fatalf("%+v", o)
	}
}

// A gate with once_per and no interval is watched for staleness with its
// period's length as the interval (2.5 days for "1d"); a period whose run
// succeeded is not stale, and its done skips are not skipping. Fails
// without GateConfig.StaleInterval (no stale condition at all).
func TestOncePerStaleUsesPeriod(t *testing.T) {
	e := healthy(t, "[gates.job]\nonce_per = \"1d\"\n")
	e.record("job", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonDone})
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != OK || !strings.Contains(o.Detail, "this period's run succeeded") {
		t.Fatalf("period done: %+v", o)
	}
	if o := obsOf(t, e.expect(), "job", CondSkipping); o.Verdict != OK {
		t.Fatalf("done skips are not skipping: %+v", o)
	}
	e.clock.Advance(60 * time.Hour)
	if o := obsOf(t, e.expect(), "job", CondStale); o.Verdict != OK {
		t.Fatalf("at exactly 2.5 days: %+v", o)
	}
	e.clock.Advance(time.Minute)
	o := obsOf(t, e.expect(), "job", CondStale)
	if o.Verdict != Bad || !strings.Contains(o.Detail, "once_per 1d, stale after 60h") {
		t.Fatalf("past 2.5 days: %+v", o)
	}
}

// TestProbeWarningOnce: a probe that fails at every check (systemctl on a
// host without systemd) is a warning once, when it starts failing, and
// again only when its failure changes or comes back after clearing; the
// condition stays held meanwhile.
func TestProbeWarningOnce(t *testing.T) {
	e := newEnv(t, "[gates.autopush]\nsystemd_timer = \"blog-autopush.timer\"\n")
	e.probe.timerErr = errors.New("Failed to connect to bus: Host is down")
	warned := func(want bool) {
		t.Helper()
		res := e.expect()
		if got := len(res.Warnings) > 0; got != want {
			t.Fatalf("warnings %q, want some: %v", res.Warnings, want)
		}
		if o := obsOf(t, res, "autopush", CondUnscheduled); e.probe.timerErr != nil && o.Verdict != Held {
			t.Fatalf("systemctl failing: %+v", o)
		}
	}
	warned(true)
	warned(false)
	warned(false)
	e.probe.timerErr = errors.New("systemctl: not found")
	warned(true)
	warned(false)
	e.probe.timerErr = nil
	e.probe.timers = map[string]string{"blog-autopush.timer": "active"}
	warned(false)
	e.probe.timerErr = errors.New("systemctl: not found")
	warned(true)
}
