package gate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safetext"
)

// onceEnv runs gate "g" in-process with an injected clock.
type onceEnv struct {
	t   *testing.T
	cfg *Config
}

func newOnceEnv(t *testing.T, per string) *onceEnv {
	cfg := DefaultConfig()
	cfg.StateDir = t.TempDir()
	cfg.Gates["g"] = &GateConfig{Name: "g", OncePer: per}
	return &onceEnv{t: t, cfg: cfg}
}

// run runs argv through the gate with the clock reading at (advancing
// 1 ms per reading); it returns the exit code and stderr.
func (e *onceEnv) run(at time.Time, flagPer string, argv ...string) (int, string) {
	e.t.Helper()
	var errb bytes.Buffer
	clock := at
	code := Run(Invocation{Gate: "g", Argv: argv, Config: e.cfg, OncePer: flagPer,
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: make(chan os.Signal),
		Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
	return code, errb.String()
}

func (e *onceEnv) summary() *journal.Summary {
	e.t.Helper()
	j, err := journal.Open(e.cfg.StateDir, "g", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer j.Close()
	s, err := j.Summary()
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// A gate with once_per runs once per period with success: a later call in
// the same period skips with the skip code and reason done (journaled,
// with the period); a failure does not count, so the next call retries;
// the next period runs again. Fails without once_per in Run (every call
// runs).
func TestOncePerRunsOncePerPeriod(t *testing.T) {
	for _, per := range OncePers {
		t.Run(per, func(t *testing.T) {
			e := newOnceEnv(t, per)
			t0 := time.Date(2026, 12, 1, 9, 0, 10, 0, time.UTC)
			p, _ := PeriodOf(per, t0, nil)
			if code, out := e.run(t0, "", "false"); code != 1 {
				t.Fatalf("first call, failing: exit %d: %s", code, out)
			}
			if code, out := e.run(t0.Add(time.Second), "", "true"); code != 0 {
				t.Fatalf("after a failure the next call must run: exit %d: %s", code, out)
			}
			code, out := e.run(t0.Add(2*time.Second), "", "true")
			if code != DefaultSkipCode || !strings.Contains(out, "is done") {
				t.Fatalf("second success in one period: exit %d, want %d and 'is done': %s", code, DefaultSkipCode, out)
			}
			s := e.summary()
			if s.LastSkip == nil || s.LastSkip.Reason != journal.ReasonDone || s.LastSkip.Period != p.Key() {
				t.Fatalf("last skip %+v, want reason done, period %s", s.LastSkip, p.Key())
			}
			if s.LastSuccess.Period != p.Key() {
				t.Fatalf("the success records period %q, want %q", s.LastSuccess.Period, p.Key())
			}
			if code, out := e.run(p.End, "", "true"); code != 0 {
				t.Fatalf("next period (%v): exit %d: %s", p.End, code, out)
			}
		})
	}
}

// --once-per on the run form does what the key does, for a gate without
// one.
func TestOncePerFlag(t *testing.T) {
	e := newOnceEnv(t, "")
	t0 := time.Date(2026, 12, 1, 9, 0, 10, 0, time.UTC)
	for i := 0; i < 2; i++ {
		if code, out := e.run(t0, "", "true"); code != 0 {
			t.Fatalf("without once_per every call runs: exit %d: %s", code, out)
		}
	}
	// A success recorded without a period counts for the period its
	// command started in.
	if code, _ := e.run(t0.Add(time.Second), OnceSlot, "true"); code != DefaultSkipCode {
		t.Fatalf("--once-per slot, a minute that already succeeded: exit %d, want the skip code", code)
	}
	t1 := t0.Add(time.Minute)
	if code, out := e.run(t1, OnceSlot, "true"); code != 0 {
		t.Fatalf("--once-per slot, next minute: exit %d: %s", code, out)
	}
	if code, _ := e.run(t1.Add(time.Second), OnceSlot, "true"); code != DefaultSkipCode {
		t.Fatalf("--once-per slot, same minute: exit %d, want the skip code", code)
	}
}

// The period is the one the run was called in: a success whose command
// started in the next minute still counts for the minute that fired it.
func TestOncePerPeriodIsTheCall(t *testing.T) {
	e := newOnceEnv(t, OnceSlot)
	t0 := time.Date(2026, 12, 1, 9, 0, 59, 0, time.UTC)
	var errb bytes.Buffer
	readings := 0
	code := Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: e.cfg, Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true},
		Sigs: make(chan os.Signal), Now: func() time.Time {
			readings++
			if readings == 1 {
				return t0
			}
			return t0.Add(2 * time.Second) // the command starts in the next minute
		}})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if c, out := e.run(t0.Add(500*time.Millisecond), "", "true"); c != DefaultSkipCode {
		t.Fatalf("same minute as the call: exit %d: %s", c, out)
	}
	if c, out := e.run(t0.Add(2*time.Second), "", "true"); c != 0 {
		t.Fatalf("the next minute is its own slot: exit %d: %s", c, out)
	}
}

// Two cron-gate processes of one gate never both run in a period: while
// one holds the period's claim (a run in progress), another skips with
// reason done.
func TestOncePerClaimInProgress(t *testing.T) {
	e := newOnceEnv(t, OnceDay)
	j, err := journal.Open(e.cfg.StateDir, "g", 0)
	if err != nil {
		t.Fatal(err)
	}
	release, held, err := j.ClaimPeriod()
	if err != nil || !held {
		t.Fatalf("claim: %v %v", held, err)
	}
	code, out := e.run(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), "", "true")
	if code != DefaultSkipCode || !strings.Contains(out, "in progress") {
		t.Fatalf("with the claim held elsewhere: exit %d: %s", code, out)
	}
	release()
	j.Close()
	if code, out := e.run(time.Date(2026, 12, 1, 9, 0, 1, 0, time.UTC), "", "true"); code != 0 {
		t.Fatalf("claim released: exit %d: %s", code, out)
	}
	if _, err := os.Lstat(filepath.Join(e.cfg.StateDir, "gates", "g", "period.lock")); err != nil {
		t.Fatalf("the claim's lock file: %v", err)
	}
}

// Status: a gate whose period is done is "done", never blocked, however
// many done skips follow; the next period makes it "ok" again (nothing
// ran yet in it). Fails if done skips count as skips.
func TestOncePerStatusDone(t *testing.T) {
	e := newOnceEnv(t, OnceHour)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p, _ := PeriodOf(OnceHour, t0, nil)
	e.run(t0, "", "true")
	for i := 1; i <= 2*BlockedSkips; i++ {
		if code, _ := e.run(t0.Add(time.Duration(i)*time.Second), "", "true"); code != DefaultSkipCode {
			t.Fatalf("call %d: exit %d", i, code)
		}
	}
	rep, err := Status(e.cfg, Pauses{}, t0.Add(time.Minute), "g")
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Gates[0]
	if st.State != StateDone || st.Blocked() || st.Skipping != nil || !st.PeriodDone || st.OncePer != OnceHour {
		t.Fatalf("state %s blocked %v skipping %+v done %v", st.State, st.Blocked(), st.Skipping, st.PeriodDone)
	}
	if !st.PeriodStart.Equal(p.Start) || !st.PeriodEnd.Equal(p.End) {
		t.Fatalf("period %v..%v, want %v..%v", st.PeriodStart, st.PeriodEnd, p.Start, p.End)
	}
	rep, _ = Status(e.cfg, Pauses{}, p.End.Add(time.Minute), "g")
	if st := rep.Gates[0]; st.State != StateOK || st.PeriodDone {
		t.Fatalf("next period: state %s done %v, want ok", st.State, st.PeriodDone)
	}
}

// The periods' rules across daylight-saving changes (PeriodOf's doc
// comment): wall-clock hours (the repeated hour is two periods, the
// skipped one none), days from local midnight of 23 or 25 hours, a day
// whose midnight is skipped beginning at the jump, weeks from Monday, and
// periods that tile time with no gap or overlap.
func TestPeriodDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	// 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
	day := func(y int, m time.Month, d int) Period {
		p, _ := PeriodOf(OnceDay, time.Date(y, m, d, 12, 0, 0, 0, ny), ny)
		return p
	}
	if d := day(2026, 3, 8); d.End.Sub(d.Start) != 23*time.Hour {
		t.Errorf("spring-forward day lasts %v, want 23h", d.End.Sub(d.Start))
	}
	if d := day(2026, 11, 1); d.End.Sub(d.Start) != 25*time.Hour {
		t.Errorf("fall-back day lasts %v, want 25h", d.End.Sub(d.Start))
	}
	// The repeated hour 01:00-02:00 on 2026-11-01 is two periods.
	first := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)  // 01:30 EDT
	second := time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC) // 01:30 EST
	p1, _ := PeriodOf(OnceHour, first, ny)
	p2, _ := PeriodOf(OnceHour, second, ny)
	if p1.Key() == p2.Key() || !p1.End.Equal(p2.Start) || p1.End.Sub(p1.Start) != time.Hour {
		t.Errorf("repeated hour: %v..%v and %v..%v", p1.Start, p1.End, p2.Start, p2.End)
	}
	// Spring forward: 01:xx EST is followed at once by 03:00 EDT.
	a, _ := PeriodOf(OnceHour, time.Date(2026, 3, 8, 6, 30, 0, 0, time.UTC), ny) // 01:30 EST
	b, _ := PeriodOf(OnceHour, time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), ny) // 03:30 EDT
	if !a.End.Equal(b.Start) || b.Start.In(ny).Hour() != 3 {
		t.Errorf("spring forward: %v..%v then %v..%v", a.Start, a.End, b.Start, b.End)
	}
	// America/Santiago skips midnight (2026-09-06 00:00 -> 01:00): that
	// day begins at 01:00.
	if scl, err := time.LoadLocation("America/Santiago"); err == nil {
		p, _ := PeriodOf(OnceDay, time.Date(2026, 9, 6, 12, 0, 0, 0, scl), scl)
		prev, _ := PeriodOf(OnceDay, time.Date(2026, 9, 5, 12, 0, 0, 0, scl), scl)
		if !prev.End.Equal(p.Start) || p.Start.In(scl).Day() != 6 || p.End.Sub(p.Start) != 23*time.Hour {
			t.Errorf("Santiago: %v..%v then %v..%v", prev.Start, prev.End, p.Start, p.End)
		}
	}
	// Weeks run Monday to Monday.
	w, _ := PeriodOf(OnceWeek, time.Date(2026, 11, 1, 12, 0, 0, 0, ny), ny) // a Sunday
	if w.Start.In(ny).Weekday() != time.Monday || w.Start.In(ny).Day() != 26 || w.End.In(ny).Day() != 2 {
		t.Errorf("week: %v..%v", w.Start, w.End)
	}
	// Every period tiles the time around both changes: each instant is
	// in exactly its own period, and the next period starts at its end.
	for _, per := range OncePers {
		for _, from := range []time.Time{time.Date(2026, 3, 7, 20, 0, 0, 0, ny), time.Date(2026, 10, 31, 20, 0, 0, 0, ny)} {
			p, _ := PeriodOf(per, from, ny)
			for i := 0; i < 40 && p.Start.Before(from.Add(30*time.Hour)); i++ {
				if !p.Contains(p.Start) || p.Contains(p.End) || !p.End.After(p.Start) {
					t.Fatalf("%s: bad period %v..%v", per, p.Start, p.End)
				}
				q, _ := PeriodOf(per, p.End, ny)
				if !q.Start.Equal(p.End) {
					t.Fatalf("%s: %v..%v is followed by %v..%v", per, p.Start, p.End, q.Start, q.End)
				}
				back, _ := PeriodOf(per, p.End.Add(-time.Nanosecond), ny)
				if back.Key() != p.Key() {
					t.Fatalf("%s: the last instant of %v..%v is in %v", per, p.Start, p.End, back.Start)
				}
				p = q
			}
		}
	}
}

// time_zone sets the zone of the gate's periods: 23:50 and 00:10 in Seoul
// are two days there, one day in UTC. Fails when periods ignore
// time_zone.
func TestOncePerTimeZone(t *testing.T) {
	if _, err := time.LoadLocation("Asia/Seoul"); err != nil {
		t.Skip("no zoneinfo:", err)
	}
	late := time.Date(2026, 12, 1, 14, 50, 0, 0, time.UTC) // 23:50 KST
	early := late.Add(20 * time.Minute)                    // 00:10 KST, Dec 2
	for zone, want := range map[string]int{"Asia/Seoul": 0, "UTC": DefaultSkipCode} {
		e := newOnceEnv(t, OnceDay)
		e.cfg.Gates["g"].TimeZone = zone
		if code, out := e.run(late, "", "true"); code != 0 {
			t.Fatalf("%s: first run: exit %d: %s", zone, code, out)
		}
		if code, out := e.run(early, "", "true"); code != want {
			t.Fatalf("%s: run 20 minutes later, across Seoul's midnight: exit %d, want %d: %s", zone, code, want, out)
		}
	}
	e := newOnceEnv(t, OnceDay)
	e.cfg.Gates["g"].TimeZone = "Asia/Seoul"
	e.run(late, "", "true")
	if s := e.summary(); s.LastSuccess.Period != "2026-12-01T00:00:00+09:00" {
		t.Fatalf("period recorded %q, want Seoul's midnight", s.LastSuccess.Period)
	}
	rep, _ := Status(e.cfg, Pauses{}, late.Add(time.Minute), "g")
	if st := rep.Gates[0]; st.PeriodEnd.Format(time.RFC3339) != "2026-12-02T00:00:00+09:00" || st.State != StateDone {
		t.Fatalf("status: period end %v, state %s", st.PeriodEnd, st.State)
	}
}

// A manual run is recorded as such with who asked; Force goes past the
// config's pause (and says so in the start record) only for a manual
// run; a manual run is still held to once_per. Fails if Force were
// honoured for cron's runs.
func TestManualRun(t *testing.T) {
	e := newOnceEnv(t, OnceWeek)
	e.cfg.Gates["g"].Paused = true
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	run := func(by string, force bool) int {
		var errb bytes.Buffer
		return Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: e.cfg, ManualBy: by, Force: force,
			Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: make(chan os.Signal), Now: func() time.Time { return t0 }})
	}
	if code := run("", true); code != DefaultSkipCode {
		t.Fatalf("Force without a manual run: exit %d, want the skip", code)
	}
	if code := run("ops@pi", false); code != DefaultSkipCode {
		t.Fatalf("manual, paused, not forced: exit %d", code)
	}
	if code := run("ops@pi", true); code != 0 {
		t.Fatalf("manual, forced: exit %d", code)
	}
	recs := readJournal(t, e.cfg.StateDir, "g")
	start := recs[len(recs)-2]
	if start.Event != journal.EventStart || start.Trigger != journal.TriggerManual || start.By != "ops@pi" || !start.Forced ||
		!strings.Contains(start.Detail, "forced past the pause: paused by config") {
		t.Fatalf("start record %+v", start)
	}
	if s := e.summary(); s.LastEnd.Trigger != journal.TriggerManual || s.LastEnd.By != "ops@pi" {
		t.Fatalf("last end %+v", s.LastEnd)
	}
	if code := run("ops@pi", true); code != DefaultSkipCode {
		t.Fatalf("manual, forced, period done: exit %d, want the skip (done)", code)
	}
}

// A gate held to once_per by its crontab line alone (--once-per, nothing
// in the config) is judged done by status as well: the records say which
// once_per the calls were held to.
func TestOncePerFlagStatusDone(t *testing.T) {
	e := newOnceEnv(t, "")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if code, out := e.run(t0, OnceHour, "true"); code != 0 {
		t.Fatalf("first call of the hour: exit %d: %s", code, out)
	}
	if code, _ := e.run(t0.Add(time.Second), OnceHour, "true"); code != DefaultSkipCode {
		t.Fatalf("second call of the hour: exit %d, want the skip code", code)
	}
	rep, err := Status(e.cfg, Pauses{}, t0.Add(time.Minute), "g")
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Gates[0]; st.State != StateDone || !st.PeriodDone || st.OncePer != OnceHour {
		t.Fatalf("--once-per 1h, the hour done: state %s done %v once_per %q; want done, 1h", st.State, st.PeriodDone, st.OncePer)
	}
	rep, _ = Status(e.cfg, Pauses{}, t0.Add(2*time.Hour), "g")
	if st := rep.Gates[0]; st.State != StateOK || st.PeriodDone {
		t.Fatalf("next hour: state %s done %v, want ok", st.State, st.PeriodDone)
	}
	// A later call without --once-per: the gate is no longer held to it.
	if code, out := e.run(t0.Add(2*time.Hour), "", "true"); code != 0 {
		t.Fatalf("a call without --once-per: exit %d: %s", code, out)
	}
	rep, _ = Status(e.cfg, Pauses{}, t0.Add(2*time.Hour+time.Second), "g")
	if st := rep.Gates[0]; st.State != StateOK || st.OncePer != "" {
		t.Fatalf("after a call without --once-per: state %s once_per %q, want ok and none", st.State, st.OncePer)
	}
}
