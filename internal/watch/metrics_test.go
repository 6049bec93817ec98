package watch

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
)

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		`a"b`:          `a\"b`,
		`back\slash`:   `back\\slash`,
		"two\nlines":   `two\nlines`,
		"\\\"\n":       `\\\"\n`,
		"bad\xffutf8":  "bad\uFFFDutf8",
		"tab\tis fine": "tab\tis fine",
		"한국어 reason":   "한국어 reason",
	} {
		if got := EscapeLabel(in); got != want {
			t.Errorf("EscapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// sampleRE is one sample line of the text format.
var sampleRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? -?[0-9.e+]+$`)

func TestWriteMetrics(t *testing.T) {
	e := healthy(t, oneGate+"[gates.other]\n")
	e.record("job", journal.Record{Event: journal.EventStart, Run: "r9", Pid: os.Getpid()})
	e.record("job", journal.Record{Event: journal.EventEnd, Run: "r9", Outcome: journal.OutcomeFailure, Exit: code(3),
		Started: e.clock.Now(), DurationMS: 1500})
	// A skip reason with every character that needs escaping.
	e.record("other", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: "odd \"reason\"\\\nx"})
	e.expect()
	res := e.expect("alert job/failed")
	var b strings.Builder
	if err := WriteMetrics(&b, e.cfg, res.Report, res.State); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"# TYPE cron_gate_last_success_timestamp_seconds gauge\ncron_gate_last_success_timestamp_seconds{gate=\"job\"} 1795942800\n",
		"cron_gate_last_failure_timestamp_seconds{gate=\"job\"} 1795942800\n",
		"cron_gate_last_duration_seconds{gate=\"job\"} 1.5\n",
		"cron_gate_last_exit_code{gate=\"job\"} 3\n",
		"# TYPE cron_gate_runs_total counter\ncron_gate_runs_total{gate=\"job\",outcome=\"success\"} 1\ncron_gate_runs_total{gate=\"job\",outcome=\"failure\"} 1\n",
		`cron_gate_skips_total{gate="other",reason="odd \"reason\"\\\nx"} 1` + "\n",
		"cron_gate_paused{gate=\"job\"} 0\n",
		"cron_gate_state{gate=\"job\",state=\"failing\"} 1\n",
		"cron_gate_state{gate=\"job\",state=\"ok\"} 0\n",
		"cron_gate_interval_seconds{gate=\"job\"} 1800\n",
		"cron_gate_condition{gate=\"job\",condition=\"failed\"} 1\n",
		"cron_gate_condition{gate=\"job\",condition=\"stale\"} 0\n",
		"cron_gate_alert{gate=\"job\",condition=\"failed\",state=\"alerted\"} 1\n",
		"cron_gate_alert{gate=\"job\",condition=\"failed\",state=\"pending\"} 0\n",
		"cron_gate_alert{gate=\"other\",condition=\"failed\",state=\"ok\"} 1\n",
		"cron_gate_check_runs_total 3\n",
		"cron_gate_check_notifications_total 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	// Every line is a comment or a valid sample; every family is
	// contiguous and announced once.
	seen := map[string]bool{}
	last := ""
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(l, "# ") {
			continue
		}
		if !sampleRE.MatchString(l) {
			t.Errorf("not a sample line: %q", l)
			continue
		}
		name := l[:strings.IndexAny(l, "{ ")]
		if name != last {
			if seen[name] {
				t.Errorf("family %s is split", name)
			}
			seen[name] = true
			last = name
		}
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("no TYPE for %s", name)
		}
	}
	// Before any check: no condition state, the rest is there.
	rep, _ := gate.Status(e.cfg, gate.Pauses{}, e.clock.Now())
	b.Reset()
	WriteMetrics(&b, e.cfg, rep, nil)
	if strings.Contains(b.String(), "cron_gate_check_") || !strings.Contains(b.String(), "cron_gate_condition{gate=\"job\",condition=\"failed\"} 0") {
		t.Errorf("without a check:\n%s", b.String())
	}
}

func TestWriteMetricsFile(t *testing.T) {
	e := healthy(t, oneGate)
	res := e.expect()
	p := filepath.Join(e.dir, "textfile", "cron-gate.prom")
	if err := WriteMetricsFile(p, e.cfg, res.Report, res.State); err == nil {
		t.Fatal("a missing directory is not created")
	}
	os.Mkdir(filepath.Dir(p), 0o755)
	if err := WriteMetricsFile(p, e.cfg, res.Report, res.State); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%v %v", fi, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}
