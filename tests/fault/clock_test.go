package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/safetext"
)

// The wall clock cannot be moved safely on a test machine, so clock jumps
// are tested where the code takes a clock (gate.Invocation.Now, the now
// argument of gate.Status) and by journals written by hand with past and
// future timestamps. Durations measured inside one cron-gate process use
// Go's monotonic clock (time.Now carries it, and Time.Sub uses it), so a
// real jump cannot make them negative; timestamps (time, started, since)
// are wall-clock and can be anywhere.

// clockGate prepares a state dir and a config for in-process gate.Run
// calls.
func clockGate(t *testing.T) (root string, cfg *gate.Config) {
	t.Helper()
	root = realTempDir(t)
	path := filepath.Join(root, "config.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("state_dir = %q\n", filepath.Join(root, "state"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateconf.Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return root, cfg
}

// runAt runs the gate in-process with the wall clock reading at (and
// advancing 1 ms per reading).
func runAt(t *testing.T, cfg *gate.Config, name string, at time.Time, argv ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	clock := at
	code := gate.Run(gate.Invocation{
		Gate: name, Argv: argv, Config: cfg, Out: &safetext.Printer{Prog: "cron-gate", W: &out},
		Sigs: make(chan os.Signal),
		Now:  func() time.Time { clock = clock.Add(time.Millisecond); return clock },
	})
	return code, out.String()
}

// TestClockJumpErrorThenSuccess: an attempt that could not start (a state
// error) is recorded while the clock is an hour fast; the clock is then
// stepped back (NTP) and the next run succeeds. The last attempt
// succeeded, so the gate is "ok", whatever the timestamps say.
func TestClockJumpErrorThenSuccess(t *testing.T) {
	full(t)
	root, cfg := clockGate(t)
	state := filepath.Join(root, "state")
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

	// An unreadable pauses.json makes the attempt fail (125, state_error).
	os.MkdirAll(state, 0o755)
	os.WriteFile(filepath.Join(state, "pauses.json"), []byte("{not json"), 0o644)
	if code, out := runAt(t, cfg, "g", t0.Add(time.Hour), "true"); code != 125 {
		t.Fatalf("with a broken pauses.json: exit %d, want 125: %s", code, out)
	}
	os.Remove(filepath.Join(state, "pauses.json"))
	// The clock is stepped back an hour; the next run succeeds.
	if code, out := runAt(t, cfg, "g", t0.Add(5*time.Minute), "true"); code != 0 {
		t.Fatalf("run after the fix: exit %d: %s", code, out)
	}
	rep, err := gate.Status(cfg, gate.Pauses{}, t0.Add(6*time.Minute), "g")
	if err != nil {
		t.Fatal(err)
	}
	if st := rep.Gates[0].State; st != "ok" {
		t.Errorf("state %q after an error and then, with the clock stepped back, a success; want ok "+
			"(the judgement compares wall-clock timestamps instead of journal order)", st)
	}
}

// TestClockJumpDuringRun: the wall clock jumps backwards and forwards
// between a run's start and end readings. Exit codes and outcomes do not
// depend on the clock; the journal keeps start and end paired by run ID.
// (duration_ms is end minus start of the injected readings; with the real
// clock it is monotonic.)
func TestClockJumpDuringRun(t *testing.T) {
	full(t)
	_, cfg := clockGate(t)
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	readings := []time.Duration{0, 0, -3 * time.Hour, 5 * time.Hour, 0, 0}
	i := 0
	code := gate.Run(gate.Invocation{
		Gate: "g", Argv: []string{"sh", "-c", "exit 4"}, Config: cfg, Out: &safetext.Printer{Prog: "cron-gate", W: &out},
		Sigs: make(chan os.Signal),
		Now: func() time.Time {
			d := readings[len(readings)-1]
			if i < len(readings) {
				d = readings[i]
			}
			i++
			return t0.Add(d)
		},
	})
	if code != 4 || out.Len() > 0 {
		t.Fatalf("exit %d, want 4; output %q", code, out.String())
	}
	for _, now := range []time.Time{t0.Add(-24 * time.Hour), t0, t0.Add(24 * time.Hour)} {
		rep, err := gate.Status(cfg, gate.Pauses{}, now, "g")
		if err != nil {
			t.Fatal(err)
		}
		g := rep.Gates[0]
		if g.State != "failing" || g.LastFailure == nil || g.LastFailure.Exit == nil || *g.LastFailure.Exit != 4 || len(g.Running) > 0 {
			t.Errorf("status at %v: state %q, last failure %+v, running %v; want failing with exit 4, nothing running", now, g.State, g.LastFailure, g.Running)
		}
	}
}

// TestClockJumpJournalTimestamps writes journals by hand with timestamps in
// the far past and future, ends before their starts, a start newer than
// "now" for a live process and one for a dead process, and checks that
// status (table, detail and JSON) stays sane: exit 0, no panic, a live run
// is "running" and a dead one "vanished" whatever the timestamps (that
// judgement uses process start times, not the clock), and no negative
// duration is printed.
func TestClockJumpJournalTimestamps(t *testing.T) {
	full(t)
	root := realTempDir(t)
	state := filepath.Join(root, "state")
	os.WriteFile(filepath.Join(root, "config.toml"), []byte(fmt.Sprintf("state_dir = %q\n", state)), 0o644)
	env := append(gateEnv(root), "FAULT_RUN="+root)

	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	_, liveTicks, _ := procStat(live.Process.Pid)
	dead := exec.Command("true")
	dead.Run()
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }

	journals := map[string][]string{
		// A run that started an hour "in the future" and still runs: the
		// clock was stepped back while it ran.
		"future-running": {
			fmt.Sprintf(`{"v":1,"gate":"future-running","run":"r1","event":"start","time":%q,"pid":%d,"pid_start":%d}`, ts(time.Hour), live.Process.Pid, liveTicks),
		},
		// The same for a run whose cron-gate is gone: vanished.
		"future-vanished": {
			fmt.Sprintf(`{"v":1,"gate":"future-vanished","run":"r1","event":"start","time":%q,"pid":%d,"pid_start":1}`, ts(time.Hour), dead.Process.Pid),
		},
		// A run that started long ago and still runs.
		"past-running": {
			fmt.Sprintf(`{"v":1,"gate":"past-running","run":"r1","event":"start","time":"2001-01-01T00:00:00Z","pid":%d,"pid_start":%d}`, live.Process.Pid, liveTicks),
		},
		// Ends before their starts, negative and absurd durations, year 1
		// and year 9999.
		"absurd": {
			fmt.Sprintf(`{"v":1,"gate":"absurd","run":"a","event":"start","time":%q,"pid":1}`, ts(2*time.Hour)),
			fmt.Sprintf(`{"v":1,"gate":"absurd","run":"a","event":"end","time":%q,"started":%q,"outcome":"success","exit":0,"duration_ms":-7200000}`, ts(-time.Hour), ts(2*time.Hour)),
			`{"v":1,"gate":"absurd","run":"b","event":"end","time":"0001-01-01T00:00:00Z","started":"9999-12-31T23:59:59Z","outcome":"failure","exit":1,"duration_ms":-9223372036854775808}`,
			`{"v":1,"gate":"absurd","run":"c","event":"skip","time":"9999-12-31T23:59:59Z","outcome":"skipped","reason":"paused"}`,
			`{"v":1,"gate":"absurd","run":"d","event":"end","time":"9999-12-31T23:59:59Z","outcome":"success","exit":0}`,
		},
	}
	for g, lines := range journals {
		d := filepath.Join(state, "gates", g)
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, "journal.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	res, out, e := run(t, env, bin("cron-gate"), "status", "--json")
	if res != (result{}) || e != "" {
		t.Fatalf("status --json: %v %s", res, e)
	}
	var rep struct {
		Gates []struct {
			Name        string
			State       string
			LastFailure *struct{ Outcome string } `json:"last_failure"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	want := map[string]string{"future-running": "running", "past-running": "running", "future-vanished": "failing", "absurd": "ok"}
	for _, g := range rep.Gates {
		if w, ok := want[g.Name]; ok && g.State != w {
			t.Errorf("gate %s: state %q, want %q", g.Name, g.State, w)
		}
		if g.Name == "future-vanished" && (g.LastFailure == nil || g.LastFailure.Outcome != "vanished") {
			t.Errorf("gate future-vanished: want its run reported vanished: %+v", g.LastFailure)
		}
	}

	// The table and the details print no negative duration and no
	// garbage; timestamps ahead of now read "in the future".
	res, table, e := run(t, env, bin("cron-gate"), "status")
	if res != (result{}) || e != "" {
		t.Fatalf("status: %v %s", res, e)
	}
	t.Logf("status table:\n%s", table)
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "for -") || strings.Contains(line, "(-") || strings.Contains(line, "after -") {
			t.Errorf("status prints a negative duration: %q", line)
		}
	}
	for g := range journals {
		res, detail, e := run(t, env, bin("cron-gate"), "status", g)
		if res != (result{}) || strings.Contains(e, "panic") {
			t.Errorf("status %s: %v %s", g, res, e)
		}
		if strings.Contains(detail, "after -") || strings.Contains(detail, "for -") {
			t.Errorf("status %s prints a negative duration:\n%s", g, detail)
		}
	}
}

// TestClockJumpWatchdog runs the watchdog (cron-gate check --dry-run
// --json, which decides as a check would and changes nothing) over
// journals whose timestamps a clock jump has put in the future or the
// past: a last success an hour ahead of now (the clock was stepped back
// after it), a last success two hours old, and an attempt that could not
// start recorded an hour ahead followed by a success recorded (after the
// step back) earlier. The watchdog must not panic, must not print negative
// durations, must not call a gate whose last success is "in the future"
// stale, and must judge "failed" by what happened last, not by which
// timestamp is larger. (The watchdog is new; on a build without
// "cron-gate check" this test only logs that.)
func TestClockJumpWatchdog(t *testing.T) {
	full(t)
	root := realTempDir(t)
	env := append(gateEnv(root), "FAULT_RUN="+root)
	if res, _, _ := run(t, env, bin("cron-gate"), "check", "--help"); res != (result{}) {
		t.Log("this cron-gate has no check subcommand; nothing to test")
		return
	}
	state := filepath.Join(root, "state")
	cfg := fmt.Sprintf("state_dir = %q\n\n[gates.future]\ninterval = \"30m\"\n\n[gates.past]\ninterval = \"30m\"\n\n[gates.stepped]\ninterval = \"30m\"\n", state)
	os.WriteFile(filepath.Join(root, "config.toml"), []byte(cfg), 0o644)
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	journals := map[string]string{
		"future": fmt.Sprintf(`{"v":1,"gate":"future","run":"a","event":"end","time":%q,"outcome":"success","exit":0}`, ts(time.Hour)),
		"past":   fmt.Sprintf(`{"v":1,"gate":"past","run":"a","event":"end","time":%q,"outcome":"success","exit":0}`, ts(-2*time.Hour)),
		"stepped": fmt.Sprintf(`{"v":1,"gate":"stepped","run":"a","event":"error","time":%q,"outcome":"error","reason":"state_error","detail":"pauses.json unreadable"}`, ts(time.Hour)) + "\n" +
			fmt.Sprintf(`{"v":1,"gate":"stepped","run":"b","event":"end","time":%q,"outcome":"success","exit":0}`, ts(-time.Minute)),
	}
	for g, j := range journals {
		d := filepath.Join(state, "gates", g)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "journal.jsonl"), []byte(j+"\n"), 0o644)
	}
	res, out, e := run(t, env, bin("cron-gate"), "check", "--dry-run", "--json")
	if res != (result{}) || strings.Contains(e, "panic") {
		t.Fatalf("check --dry-run --json: %v\n%s", res, e)
	}
	var rep struct {
		Conditions []struct{ Gate, Condition, Verdict, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	verdict := map[string]string{}
	for _, c := range rep.Conditions {
		verdict[c.Gate+" "+c.Condition] = c.Verdict
		if negDuration.MatchString(c.Detail) {
			t.Errorf("gate %s, %s: a negative duration in %q", c.Gate, c.Condition, c.Detail)
		}
	}
	for k, want := range map[string]string{"future stale": "ok", "past stale": "bad", "stepped failed": "ok"} {
		if verdict[k] != want {
			t.Errorf("%s: verdict %q, want %q (conditions: %+v)", k, verdict[k], want, rep.Conditions)
		}
	}
}

// negDuration matches a Go duration printed negative ("-59m59.6s").
var negDuration = regexp.MustCompile(`(^|[\s(])-[0-9]+(\.[0-9]+)?(h|m|s|ms|µs|ns)`)
