package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/lockfile"
)

// note returns the result's one notification.
func note(t *testing.T, res *Result) *Notification {
	t.Helper()
	if len(res.Notifications) != 1 || len(res.Notifications[0].Delivered) != 1 {
		t.Fatalf("notifications: %+v", res.Notifications)
	}
	return res.Notifications[0]
}

// TestSkippingCondition (issue 16, item 2): a gate stuck behind a held
// legacy lock is blocked within one interval and alerted once it has
// been blocked for skipping_after (default: the interval), with the
// reason, the holder's pid and command; its recovery names what it was.
func TestSkippingCondition(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, "old.lock")
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	e := healthy(t, fmt.Sprintf("[gates.job]\ninterval = \"30m\"\nlegacy_locks = [%q]\n", lock))
	skip := func() {
		e.record("job", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonLegacyLock, Detail: "held"})
	}
	e.clock.Advance(30 * time.Minute)
	skip()
	if o := obsOf(t, e.expect(), "job", CondSkipping); o.Verdict != OK {
		t.Fatalf("one skip: %+v", o)
	}
	e.clock.Advance(30 * time.Minute)
	skip() // two skips one interval apart: blocked, for 30m = skipping_after
	o := obsOf(t, e.expect(), "job", CondSkipping)
	if o.Verdict != Bad || !strings.Contains(o.Detail, "legacy_lock") || !strings.Contains(o.Detail, fmt.Sprintf("held by pid %d", os.Getpid())) {
		t.Fatalf("blocked for an interval: %+v", o)
	}
	e.clock.Advance(5 * time.Minute)
	n := note(t, e.expect("alert job/skipping"))
	if n.Title != "cron-gate: job is blocked" || !strings.Contains(n.Body, "(legacy_lock)") || !strings.Contains(n.Body, fmt.Sprintf("held by pid %d (", os.Getpid())) {
		t.Errorf("alert: %q\n%s", n.Title, n.Body)
	}
	e.clock.Advance(5 * time.Minute)
	e.expect()
	e.success("job")
	n = note(t, e.expect("recovery job/skipping"))
	if !strings.Contains(n.Body, "Was: blocked for ") || !strings.Contains(n.Body, fmt.Sprintf("held by pid %d", os.Getpid())) {
		t.Errorf("recovery: %s", n.Body)
	}
}

// TestSkippingAfterConfigurable: skipping_after holds the alert longer
// than the interval; a paused gate is held.
func TestSkippingAfterConfigurable(t *testing.T) {
	e := healthy(t, "[gates.job]\ninterval = \"30m\"\nskipping_after = \"2h\"\n")
	for i := 0; i < 3; i++ {
		e.clock.Advance(30 * time.Minute)
		e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Exit: code(75)})
	}
	o := obsOf(t, e.expect(), "job", CondSkipping)
	if o.Verdict != OK || !strings.Contains(o.Detail, "blocked for 1h (busy), alert after 2h") {
		t.Fatalf("blocked 1h of 2h: %+v", o)
	}
	e.clock.Advance(61 * time.Minute)
	if o := obsOf(t, obsRes(e), "job", CondSkipping); o.Verdict != Bad || !strings.Contains(o.Detail, "withlock who") {
		t.Fatalf("blocked past 2h: %+v", o)
	}
}

// TestOverrunCondition: a run in progress longer than max_runtime is
// bad, alerted once; its end recovers it.
func TestOverrunCondition(t *testing.T) {
	e := healthy(t, "[gates.job]\nmax_runtime = \"1h\"\n")
	e.record("job", journal.Record{Event: journal.EventStart, Run: "long", Pid: os.Getpid(), ChildPid: os.Getpid()})
	e.clock.Advance(30 * time.Minute)
	if o := obsOf(t, e.expect(), "job", CondOverrun); o.Verdict != OK {
		t.Fatalf("30m of 1h: %+v", o)
	}
	e.clock.Advance(31 * time.Minute)
	o := obsOf(t, e.expect(), "job", CondOverrun)
	if o.Verdict != Bad || !strings.Contains(o.Detail, "run long (pid ") || !strings.Contains(o.Detail, "longer than max_runtime 1h") {
		t.Fatalf("61m: %+v", o)
	}
	e.clock.Advance(5 * time.Minute)
	e.expect("alert job/overrun")
	e.record("job", journal.Record{Event: journal.EventEnd, Run: "long", Outcome: journal.OutcomeSuccess, Exit: code(0), Started: t0})
	e.expect("recovery job/overrun")
	noObs(t, obsRes(e), "other", CondOverrun)
}

func obsRes(e *env) *Result { r, _ := e.check(); return r }

// TestFailureAlertCarriesOutput: a failure alert carries the exit code
// and the last lines of the run's output (escape sequences removed, at
// most ten lines), unless alert_output = false; never another run's.
func TestFailureAlertCarriesOutput(t *testing.T) {
	for _, off := range []bool{false, true} {
		body := "[gates.job]\ninterval = \"30m\"\nlog_output = true\n"
		if off {
			body += "alert_output = false\n"
		}
		e := healthy(t, body)
		e.clock.Advance(time.Minute)
		end := journal.Record{Event: journal.EventEnd, Run: "r7", Outcome: journal.OutcomeFailure, Exit: code(3), Started: e.clock.Now(), Time: e.clock.Now()}
		e.record("job", end)
		var out strings.Builder
		for i := 1; i <= 15; i++ {
			fmt.Fprintf(&out, "line %d\n", i)
		}
		out.WriteString("\x1b[31mValueError: quota\x1b[0m\n")
		e.write(filepath.Join("gates", "job", "output.log"), "=== cron-gate run r7 started "+end.Started.Format(time.RFC3339Nano)+"\n"+out.String()+
			"=== cron-gate run r7 ended "+end.Time.Format(time.RFC3339Nano)+": failure, exit 3\n")
		e.expect()
		e.clock.Advance(5 * time.Minute)
		m := note(t, e.expect("alert job/failed"))
		if !strings.Contains(m.Body, "exit 3") {
			t.Errorf("alert body lacks the exit code: %q", m.Body)
		}
		if off {
			if m.Output != "" || strings.Contains(m.Body, "ValueError") {
				t.Errorf("alert_output = false: output %q, body %q", m.Output, m.Body)
			}
			continue
		}
		if !strings.HasSuffix(m.Output, "  line 15\n  ValueError: quota") || strings.Contains(m.Output, "line 6\n") || strings.Count(m.Output, "\n") != 9 {
			t.Errorf("output:\n%s", m.Output)
		}
		if !strings.Contains(m.Body, "Last output:\n  line 7\n") {
			t.Errorf("body:\n%s", m.Body)
		}
	}
}

// TestBlockedMetrics (issue 16, item 5): the blocked state, its reason,
// the skips in a row and since when, the new conditions, and overrun.
func TestBlockedMetrics(t *testing.T) {
	e := healthy(t, "[gates.job]\ninterval = \"30m\"\n[gates.long]\nmax_runtime = \"1h\"\n")
	for i := 0; i < 3; i++ {
		e.clock.Advance(time.Minute)
		e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Exit: code(75)})
	}
	e.record("long", journal.Record{Event: journal.EventStart, Run: "l", Pid: os.Getpid(), Time: t0})
	e.clock.Advance(2 * time.Hour)
	res, _ := e.check()
	var b strings.Builder
	if err := WriteMetrics(&b, e.cfg, res.Report, res.State); err != nil {
		t.Fatal(err)
	}
	// Every sample is labelled state_dir first; the wants leave it out.
	sd := `state_dir="` + EscapeLabel(e.dir) + `",`
	if !strings.Contains(b.String(), `cron_gate_blocked{`+sd) {
		t.Errorf("cron_gate_blocked without the state_dir label:\n%s", b.String())
	}
	text := strings.ReplaceAll(b.String(), sd, "")
	for _, want := range []string{
		`cron_gate_state{gate="job",state="blocked"} 1`,
		`cron_gate_blocked{gate="job",reason="busy"} 1`,
		`cron_gate_blocked{gate="job",reason="legacy_lock"} 0`,
		`cron_gate_blocked{gate="long",reason="busy"} 0`,
		`cron_gate_consecutive_skips{gate="job"} 3`,
		fmt.Sprintf(`cron_gate_skipping_since_timestamp_seconds{gate="job"} %d`, t0.Add(time.Minute).Unix()),
		`cron_gate_condition{gate="job",condition="skipping"} 1`,
		`cron_gate_running_seconds{gate="long"} 7380`,
		`cron_gate_overrun{gate="long"} 1`,
		`cron_gate_condition{gate="long",condition="overrun"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(text, `cron_gate_overrun{gate="job"}`) {
		t.Error("overrun for a gate without max_runtime")
	}
}
