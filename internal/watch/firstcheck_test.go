package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
)

// The first check's rules (docs/watchdog.md, "Quiet first run"): it mutes
// only what began more than check_interval before it; what it mutes
// alerts once it is still bad remind_after later (issue 32, item 8).

// A job that failed within one check interval before the first check is
// new: it alerts after alert_after checks, as if the watchdog had been
// there (the job that starts failing in the minute the watchdog is
// installed).
func TestFirstCheckNewFailureAlerts(t *testing.T) {
	e := newEnv(t, oneGate)
	e.failure("job", 1)
	e.clock.Advance(time.Minute)
	res := e.expect() // the first check: bad, not muted
	if c := e.cond("job", CondFailed); c == nil || c.Muted || c.KnownAtInstall || c.Count != 1 {
		t.Fatalf("first check: %+v (%+v)", c, res.Conditions)
	}
	e.clock.Advance(5 * time.Minute)
	e.expect("alert job/failed")
}

// The window is check_interval: a failure that began exactly that long
// before the first check is new, one a second older is known at install.
func TestFirstCheckWindowIsCheckInterval(t *testing.T) {
	for _, c := range []struct {
		ago   time.Duration
		muted bool
	}{{5 * time.Minute, false}, {5*time.Minute + time.Second, true}} {
		e := newEnv(t, oneGate)
		e.failure("job", 1)
		e.clock.Advance(c.ago)
		e.expect()
		if got := e.cond("job", CondFailed); got == nil || got.Muted != c.muted || got.KnownAtInstall != c.muted {
			t.Fatalf("failed %v before the first check: %+v, want muted %v", c.ago, got, c.muted)
		}
	}
	e := newEnv(t, "[check]\ncheck_interval = \"1h\"\n"+oneGate)
	e.failure("job", 1)
	e.clock.Advance(50 * time.Minute)
	e.expect()
	e.expect("alert job/failed")
}

// A job failing from its first run, in a gate without an interval, alerts
// after alert_after checks: its streak began with that run, which the
// recent attempts show (skips in between do not end it).
func TestFirstCheckFailingFromFirstRun(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	e.failure("job", 1)
	e.clock.Advance(time.Minute)
	e.record("job", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy})
	e.clock.Advance(time.Minute)
	e.failure("job", 1)
	e.clock.Advance(time.Minute)
	e.expect()
	e.expect("alert job/failed")
}

// A job that has failed every minute for longer than the recent attempts
// reach began before them: known at install, although its last failure
// is recent.
func TestFirstCheckLongFailingIsKnown(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	for i := 0; i < journal.RecentAttempts+5; i++ {
		e.failure("job", 1)
		e.clock.Advance(time.Minute)
	}
	res := e.expect()
	if c := e.cond("job", CondFailed); c == nil || !c.Muted || !c.KnownAtInstall {
		t.Fatalf("long failing: %+v", c)
	}
	// check --json says so, and when it will be reported.
	for _, cs := range res.Conditions {
		if cs.Condition == CondFailed && (!cs.KnownAtInstall || !cs.Muted || !cs.RemindAt.Equal(e.clock.Now().Add(24*time.Hour))) {
			t.Fatalf("condition status: %+v", cs)
		}
	}
}

// A condition muted by the first check alerts once it is still bad
// remind_after (24h by default) after that check, once; its alert says it
// was known at install, and a recovery follows when it clears. A gate
// without an interval that was broken from the start no longer stays
// silent for ever.
func TestKnownAtInstallReminder(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	e.failure("job", 1)
	e.clock.Advance(time.Hour)
	e.expect() // muted
	for i := 0; i < 23; i++ {
		e.clock.Advance(time.Hour)
		e.expect()
	}
	e.clock.Advance(time.Hour) // 24h after the first check
	e.expect("alert job/failed")
	c := e.cond("job", CondFailed)
	if c == nil || c.Muted || !c.KnownAtInstall || len(c.Alerted) != 1 {
		t.Fatalf("after the reminder: %+v", c)
	}
	e.clock.Advance(time.Hour)
	e.expect() // once
	e.success("job")
	e.expect("recovery job/failed")
}

// The reminder's body says why it comes now; remind_after is configurable.
func TestKnownAtInstallReminderBody(t *testing.T) {
	e := newEnv(t, "[check]\nremind_after = \"2h\"\n[gates.job]\n")
	e.failure("job", 1)
	e.clock.Advance(time.Hour)
	e.expect()
	e.clock.Advance(time.Hour)
	e.expect()
	e.clock.Advance(time.Hour)
	e.rec.mu.Lock()
	e.rec.msgs = nil
	e.rec.mu.Unlock()
	if _, err := e.checker().Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.rec.mu.Lock()
	msgs := e.rec.msgs
	e.rec.mu.Unlock()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, "Known at install: already bad at the watchdog's first check, muted, and still bad after remind_after 2h.") {
		t.Fatalf("reminder: %+v", msgs)
	}
}

// Only the first check mutes: a condition that begins at any later check
// alerts, even one that was muted, cleared and came back.
func TestConditionAfterFirstCheckNeverMuted(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	e.success("job")
	e.expect()
	e.clock.Advance(10 * time.Minute)
	e.failure("job", 1)
	e.clock.Advance(4 * time.Hour) // long before the next check
	e.expect()
	if c := e.cond("job", CondFailed); c == nil || c.Muted || c.KnownAtInstall {
		t.Fatalf("after the first check: %+v", c)
	}
	e.expect("alert job/failed")
}

// Stale that began within check_interval before the first check is new;
// stale begun long before is known at install.
func TestFirstCheckStaleBegan(t *testing.T) {
	e := newEnv(t, oneGate)
	e.success("job")
	e.clock.Advance(75*time.Minute + 2*time.Minute) // stale after 2.5 × 30m: 2m ago
	e.expect()
	e.expect("alert job/stale")
	e = newEnv(t, oneGate)
	e.success("job")
	e.clock.Advance(10 * time.Hour)
	e.expect()
	if c := e.cond("job", CondStale); c == nil || !c.Muted {
		t.Fatalf("stale for hours at the first check: %+v", c)
	}
}

// A gate whose once_per is only on its crontab line is watched for
// staleness as with the config key: from its recorded calls, and before
// any call from the line's --once-per.
func TestOncePerCrontabLineStale(t *testing.T) {
	e := newEnv(t, "[gates.job]\n")
	e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeSuccess, Exit: code(0), Started: e.clock.Now(), OncePer: "1d"})
	e.expect()
	e.clock.Advance(61 * time.Hour) // 2.5 days
	e.expect()
	e.expect("alert job/stale")

	// Never run yet: the line's --once-per 1d; missing after 2.5 days.
	e = newEnv(t, "[gates.job]\n")
	e.probe.cron = map[string]bool{"job": true}
	e.probe.flags = map[string][]string{"job": {"-q", "--once-per", "1d"}}
	res := e.expect()
	found := false
	for _, cs := range res.Conditions {
		found = found || cs.Condition == CondStale
	}
	if !found {
		t.Fatalf("no stale watch: %+v", res.Conditions)
	}
	e.clock.Advance(61 * time.Hour)
	e.expect()
	e.expect("alert job/stale")
}

// LineOncePer reads --once-per P and --once-per=P from the first line
// cron runs; a line cron ignores does not count.
func TestLineOncePer(t *testing.T) {
	for _, c := range []struct {
		jobs []CrontabJob
		want string
	}{
		{[]CrontabJob{{Flags: []string{"-q", "--once-per", "1d"}}}, "1d"},
		{[]CrontabJob{{Flags: []string{"--once-per=1w"}}}, "1w"},
		{[]CrontabJob{{Flags: []string{"--once-per=1h"}, Rejected: "bad minute"}, {Flags: []string{"--once-per", "1d"}}}, "1d"},
		{[]CrontabJob{{Flags: []string{"--once-per"}}}, ""},
		{nil, ""},
	} {
		if got := LineOncePer(c.jobs); got != c.want {
			t.Errorf("LineOncePer(%+v) = %q, want %q", c.jobs, got, c.want)
		}
	}
}

// A gate blocked for skipping_after: the condition began when that was
// passed. Passed within check_interval before the first check: new;
// long before: known at install.
func TestFirstCheckSkippingBegan(t *testing.T) {
	for _, c := range []struct {
		after time.Duration // from the first skip to the first check
		muted bool
	}{{30*time.Minute + 2*time.Minute, false}, {3 * time.Hour, true}} {
		e := newEnv(t, "[gates.job]\nskipping_after = \"30m\"\n")
		for i := 0; i < 3; i++ {
			e.record("job", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Time: t0.Add(time.Duration(i) * time.Minute)})
		}
		e.clock.Advance(c.after)
		res := e.expect()
		o := obsOf(t, res, "job", CondSkipping)
		if o.Verdict != Bad || !o.Began.Equal(t0.Add(30*time.Minute)) {
			t.Fatalf("blocked %v: %+v", c.after, o)
		}
		if got := e.cond("job", CondSkipping); got == nil || got.Muted != c.muted {
			t.Fatalf("blocked %v before the first check: %+v, want muted %v", c.after, got, c.muted)
		}
	}
}
