package gate

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// The offset is stable (the same for the same gate, host and jitter), in
// [0, jitter), whole milliseconds, and spreads gates and hosts over the
// window rather than piling them up.
func TestJitterOffset(t *testing.T) {
	const j = 5 * time.Minute
	if JitterOffset("g", "h", 0) != 0 || JitterOffset("g", "h", -time.Second) != 0 {
		t.Fatal("no jitter must be no offset")
	}
	buckets := make([]int, 10)
	seen := map[time.Duration]bool{}
	for i := 0; i < 1000; i++ {
		g := "gate-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		d := JitterOffset(g, "host1", j)
		if d < 0 || d >= j || d%time.Millisecond != 0 {
			t.Fatalf("offset %v of %s is not a whole millisecond in [0, %v)", d, g, j)
		}
		if again := JitterOffset(g, "host1", j); again != d {
			t.Fatalf("offset of %s: %v then %v", g, d, again)
		}
		buckets[int(d*10/j)]++
		seen[d] = true
	}
	for i, n := range buckets {
		if n < 50 {
			t.Errorf("tenth %d of the window holds %d of 1000 offsets: %v", i, n, buckets)
		}
	}
	if JitterOffset("g", "host1", j) == JitterOffset("g", "host2", j) && JitterOffset("g", "host3", j) == JitterOffset("g", "host2", j) {
		t.Error("three hosts get the same offset for one gate")
	}
}

// The run waits the gate's offset after every decision and before the
// command, holding nothing (another cron-gate can claim the period
// meanwhile), and the offset is journaled; a success recorded during
// the wait is seen after it (the period is checked again under the
// claim). --jitter overrides the key. Fails without the wait (Wait never
// called) or with the claim held across it.
func TestJitterWaitsHoldingNothing(t *testing.T) {
	e := newOnceEnv(t, OnceDay)
	e.cfg.Gates["g"].Jitter = time.Hour
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	want := JitterOffset("g", hostname(), time.Hour)
	var waited []time.Duration
	run := func(flag time.Duration, during func()) (int, string) {
		var errb bytes.Buffer
		clock := t0
		code := Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: e.cfg, Jitter: flag,
			Out: &safetext.Printer{Prog: "cron-gate", W: &errb, Verbose: true, ReportSkips: true}, Sigs: make(chan os.Signal),
			Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock },
			Wait: func(d time.Duration) {
				waited = append(waited, d)
				if during != nil {
					during()
				}
			}})
		return code, errb.String()
	}
	// During the wait, the period's claim is free; a run of the period
	// succeeds meanwhile (another call, another host's journal merge).
	code, out := run(0, func() {
		j, err := journal.Open(e.cfg.StateDir, "g", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		release, held, err := j.ClaimPeriod()
		if err != nil || !held {
			t.Fatalf("the claim is held during the wait: %v %v", held, err)
		}
		release()
		p, _ := PeriodOf(OnceDay, t0, nil)
		if err := j.Append(journal.Record{Gate: "g", Run: "other", Event: journal.EventEnd, Time: t0, Outcome: journal.OutcomeSuccess, Exit: new(int), Period: p.Key()}); err != nil {
			t.Fatal(err)
		}
	})
	if code != DefaultSkipCode || !strings.Contains(out, "is done") {
		t.Fatalf("a success recorded during the wait: exit %d: %s", code, out)
	}
	if len(waited) != 1 || waited[0] != want {
		t.Fatalf("waited %v, want [%v]", waited, want)
	}
	if want > 0 && !strings.Contains(out, "waiting "+want.String()) {
		t.Fatalf("-v says nothing of the wait: %s", out)
	}
	// The period is done now: no wait at all (decided before it).
	waited = nil
	if code, _ := run(0, nil); code != DefaultSkipCode || len(waited) != 0 {
		t.Fatalf("a done period: exit %d, waited %v", code, waited)
	}
	// Another gate: the wait is journaled in its start record; --jitter
	// overrides the key.
	e.cfg.Gates["g"].OncePer = ""
	waited = nil
	if code, out := run(10*time.Minute, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	flagWant := JitterOffset("g", hostname(), 10*time.Minute)
	if len(waited) != 1 || waited[0] != flagWant {
		t.Fatalf("--jitter 10m: waited %v, want [%v]", waited, flagWant)
	}
	if s := e.summary(); s.LastStart == nil {
		t.Fatal("no start")
	}
	recs := readJournal(t, e.cfg.StateDir, "g")
	last := recs[len(recs)-2]
	if last.Event != journal.EventStart || last.JitterMS != flagWant.Milliseconds() {
		t.Fatalf("start record %+v, want jitter_ms %d", last, flagWant.Milliseconds())
	}
}

// readJournal returns the gate's journal records.
func readJournal(t *testing.T, stateDir, gate string) []journal.Record {
	t.Helper()
	f, err := os.Open(stateDir + "/gates/" + gate + "/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, errs := journal.ReadRecords(f)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return recs
}

// A signal ends the wait at once (an hour's jitter here), and the command
// never starts.
func TestJitterSignalEndsWait(t *testing.T) {
	e := newOnceEnv(t, "")
	name := "g"
	var jitter time.Duration
	for jitter = time.Hour; JitterOffset(name, hostname(), jitter) < time.Minute; jitter *= 2 {
	}
	e.cfg.Gates["g"].Jitter = jitter
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Run(Invocation{Gate: "g", Argv: []string{"touch", t.TempDir() + "/ran"}, Config: e.cfg,
			Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: sigs})
	}()
	select {
	case code := <-done:
		if code != runner.SignalCode(syscall.SIGTERM) {
			t.Fatalf("exit %d, want 143: %s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the signal did not end the jitter's wait")
	}
	if s := e.summary(); s.LastStart != nil {
		t.Fatalf("the command started: %+v", s.LastStart)
	}
}

// A jitter given on the crontab line alone (--jitter, none in the config)
// is counted in next-run times too: JitterOf reads the offset the latest
// run waited from its start record; the config's jitter, when there is
// one, is computed.
func TestJitterOfFlag(t *testing.T) {
	e := newOnceEnv(t, "")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	want := JitterOffset("g", hostname(), time.Hour)
	if want <= 0 {
		t.Fatalf("JitterOffset gave %v for an hour", want)
	}
	var errb bytes.Buffer
	code := Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: e.cfg, Jitter: time.Hour,
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb}, Sigs: make(chan os.Signal),
		Now: func() time.Time { return t0 }, Wait: func(time.Duration) {}})
	if code != 0 {
		t.Fatalf("run with --jitter 1h: exit %d: %s", code, errb.String())
	}
	rep, err := Status(e.cfg, Pauses{}, t0.Add(time.Minute), "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := JitterOf(e.cfg.Gate("g"), &rep.Gates[0], hostname()); got != want.Truncate(time.Millisecond) {
		t.Errorf("JitterOf after a --jitter 1h run: %v, want the offset it waited, %v", got, want)
	}
	g := *e.cfg.Gate("g")
	g.Jitter = 10 * time.Minute
	if got, w := JitterOf(&g, &rep.Gates[0], "other-host"), JitterOffset("g", "other-host", 10*time.Minute); got != w {
		t.Errorf("JitterOf with jitter in the config: %v, want %v", got, w)
	}
}

// A pause made while a run waits out its jitter (up to MaxJitter) stops
// it: the run decides again after the wait and skips, paused, without
// starting the command. Fails if the run goes on to its command after
// the wait on what it decided before it.
func TestJitterPauseDuringWait(t *testing.T) {
	e := newOnceEnv(t, "")
	// A gate whose offset on this host is not 0 (one in 3.6 million is).
	name := "g"
	for i := 0; JitterOffset(name, hostname(), time.Hour) == 0; i++ {
		name = "g" + strconv.Itoa(i)
	}
	e.cfg.Gates[name] = &GateConfig{Name: name, Jitter: time.Hour}
	ran := t.TempDir() + "/ran"
	var errb bytes.Buffer
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := t0
	code := Run(Invocation{Gate: name, Argv: []string{"touch", ran}, Config: e.cfg,
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: make(chan os.Signal),
		Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock },
		Wait: func(time.Duration) {
			if err := NewPauseFile(e.cfg.StateDir).Set(context.Background(), name, Pause{Reason: "during the wait", Since: t0}); err != nil {
				t.Fatal(err)
			}
		}})
	if code != DefaultSkipCode || !strings.Contains(errb.String(), "during the wait") {
		t.Fatalf("paused during the wait: exit %d, want %d: %s", code, DefaultSkipCode, errb.String())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran although the gate was paused during its wait")
	}
	recs := readJournal(t, e.cfg.StateDir, name)
	if last := recs[len(recs)-1]; last.Event != journal.EventSkip || last.Reason != journal.ReasonPaused {
		t.Fatalf("last record %+v, want a paused skip", last)
	}
}
