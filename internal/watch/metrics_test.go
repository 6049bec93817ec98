package watch

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/tests/testbin"
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
	// Every sample is labelled state_dir first.
	sd := `state_dir="` + EscapeLabel(e.dir) + `",`
	for _, want := range []string{
		"# TYPE cron_gate_last_success_timestamp_seconds gauge\ncron_gate_last_success_timestamp_seconds{" + sd + "gate=\"job\"} 1795942800\n",
		"cron_gate_last_failure_timestamp_seconds{" + sd + "gate=\"job\"} 1795942800\n",
		"cron_gate_last_duration_seconds{" + sd + "gate=\"job\"} 1.5\n",
		"cron_gate_last_exit_code{" + sd + "gate=\"job\"} 3\n",
		"# TYPE cron_gate_runs_total counter\ncron_gate_runs_total{" + sd + "gate=\"job\",outcome=\"success\"} 1\ncron_gate_runs_total{" + sd + "gate=\"job\",outcome=\"failure\"} 1\n",
		"cron_gate_skips_total{" + sd + `gate="other",reason="odd \"reason\"\\\nx"} 1` + "\n",
		// Counters that exist for a gate are there from 0.
		"cron_gate_skips_total{" + sd + "gate=\"job\",reason=\"paused\"} 0\n",
		"cron_gate_skips_total{" + sd + "gate=\"job\",reason=\"busy\"} 0\n",
		"cron_gate_skips_total{" + sd + "gate=\"other\",reason=\"legacy_lock\"} 0\n",
		"cron_gate_runs_total{" + sd + "gate=\"other\",outcome=\"failure\"} 0\n",
		"cron_gate_paused{" + sd + "gate=\"job\"} 0\n",
		"cron_gate_state{" + sd + "gate=\"job\",state=\"failing\"} 1\n",
		"cron_gate_state{" + sd + "gate=\"job\",state=\"ok\"} 0\n",
		"cron_gate_interval_seconds{" + sd + "gate=\"job\"} 1800\n",
		"cron_gate_condition{" + sd + "gate=\"job\",condition=\"failed\"} 1\n",
		"cron_gate_condition{" + sd + "gate=\"job\",condition=\"stale\"} 0\n",
		"cron_gate_alert{" + sd + "gate=\"job\",condition=\"failed\",state=\"alerted\"} 1\n",
		"cron_gate_alert{" + sd + "gate=\"job\",condition=\"failed\",state=\"pending\"} 0\n",
		"cron_gate_alert{" + sd + "gate=\"other\",condition=\"failed\",state=\"ok\"} 1\n",
		"cron_gate_check_runs_total{" + strings.TrimSuffix(sd, ",") + "} 3\n",
		"cron_gate_check_notifications_total{" + strings.TrimSuffix(sd, ",") + "} 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	// No help text speaks of a label that is not there.
	if strings.Contains(text, "per notifier)") {
		t.Errorf("a help text promises a notifier label:\n%s", text)
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
	if strings.Contains(b.String(), "cron_gate_check_") || !strings.Contains(b.String(), "cron_gate_condition{"+sd+"gate=\"job\",condition=\"failed\"} 0") {
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

// metricsOf is the exposition of a watchdog with a failing, a skipping
// and a paused gate, after two checks.
func metricsOf(t *testing.T) (string, *env) {
	t.Helper()
	e := healthy(t, oneGate+"[gates.other]\n[gates.held]\npaused = true\n")
	e.record("job", journal.Record{Event: journal.EventEnd, Run: "r9", Outcome: journal.OutcomeFailure, Exit: code(3),
		Started: e.clock.Now(), DurationMS: 1500})
	e.record("other", journal.Record{Event: journal.EventSkip, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonLegacyLock})
	e.expect()
	res := e.expect("alert job/failed")
	var b strings.Builder
	if err := WriteMetrics(&b, e.cfg, res.Report, res.State); err != nil {
		t.Fatal(err)
	}
	return b.String(), e
}

// needTool returns the path of a program the test needs, or skips; under
// CI (which installs it, .ci/run) a missing one fails.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (Debian's %s) is not installed; CI needs it", name, pkg)
		}
		t.Skipf("%s (Debian's %s) is not installed", name, pkg)
	}
	return p
}

// TestMetricsPromtool: Prometheus's own checker (promtool check metrics,
// its text parser and its linter) finds nothing to say of the exposition.
func TestMetricsPromtool(t *testing.T) {
	testbin.Full(t, "Debian's prometheus and prometheus-node-exporter")
	promtool := needTool(t, "promtool", "prometheus")
	text, _ := metricsOf(t)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s\n--- the exposition:\n%s", err, out, text)
	}
	t.Logf("promtool check metrics: %d samples of %d metrics, nothing to say", samples(text, "cron_gate_"), strings.Count(text, "# TYPE "))
}

// samples counts the sample lines of an exposition whose name begins
// with prefix.
func samples(text, prefix string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestMetricsTwoWatchdogs: two watchdogs (two state dirs, the same gate
// names) writing textfiles into one directory, read by node_exporter's
// textfile collector: every series of both is served and node_exporter
// finds no sample twice. The negative control — the same watchdog's file
// twice — shows that node_exporter does report duplicates ("collected
// before with the same name and label values"), which the unlabelled
// series used to give.
func TestMetricsTwoWatchdogs(t *testing.T) {
	testbin.Full(t, "Debian's prometheus and prometheus-node-exporter")
	exporter := needTool(t, "prometheus-node-exporter", "prometheus-node-exporter")
	a, ea := metricsOf(t)
	b, eb := metricsOf(t)
	if ea.dir == eb.dir {
		t.Fatal("the two watchdogs share a state dir")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "root.prom"), []byte(a), 0o644)
	os.WriteFile(filepath.Join(dir, "user.prom"), []byte(b), 0o644)
	body, log := scrapeTextfiles(t, exporter, dir)
	if strings.Contains(log, "collected before") || strings.Contains(body, "\nnode_textfile_scrape_error 1\n") {
		t.Fatalf("node_exporter found duplicates or could not read a file:\n%s\n%s", log, grepLines(body, "node_textfile"))
	}
	for _, d := range []string{ea.dir, eb.dir} {
		for _, want := range []string{
			`cron_gate_runs_total{gate="job",outcome="failure",state_dir="` + d + `"} 1`,
			`cron_gate_check_runs_total{state_dir="` + d + `"} `,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("node_exporter does not serve %s", want)
			}
		}
	}
	if got, want := samples(body, "cron_gate_"), samples(a, "cron_gate_")+samples(b, "cron_gate_"); got != want {
		t.Errorf("node_exporter serves %d cron_gate samples of the two files' %d", got, want)
	}
	t.Logf("node_exporter, two watchdogs' textfiles in one directory: %d cron_gate samples served (%d + %d), no duplicate", samples(body, "cron_gate_"), samples(a, "cron_gate_"), samples(b, "cron_gate_"))
	// The negative control: one watchdog's file twice.
	os.WriteFile(filepath.Join(dir, "user.prom"), []byte(a), 0o644)
	_, log = scrapeTextfiles(t, exporter, dir)
	if !strings.Contains(log, "collected before with the same name and label values") {
		t.Fatalf("node_exporter did not report the same file twice as duplicates; the check above proves nothing:\n%s", log)
	}
	t.Logf("negative control, one watchdog's file twice: node_exporter reports %d duplicates", strings.Count(log, "collected before with the same name and label values"))
}

// scrapeTextfiles runs node_exporter with only its textfile collector on
// dir, on a free loopback port (another one if it was taken meanwhile),
// scrapes /metrics once and returns the body and node_exporter's log.
func scrapeTextfiles(t *testing.T, exporter, dir string) (body, log string) {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		var logb bytes.Buffer
		cmd := exec.Command(exporter, "--collector.disable-defaults", "--collector.textfile",
			"--collector.textfile.directory="+dir, "--web.listen-address="+addr)
		cmd.Stdout, cmd.Stderr = &logb, &logb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				// The port was taken meanwhile: another one.
				deadline = time.Time{}
				continue
			default:
			}
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			stop()
			if resp.StatusCode != 200 {
				t.Fatalf("node_exporter: HTTP %d\n%s", resp.StatusCode, data)
			}
			return string(data), logb.String()
		}
		stop()
		if time.Now().Before(deadline.Add(time.Hour)) && !deadline.IsZero() {
			t.Fatalf("node_exporter did not answer within 30s:\n%s", logb.String())
		}
	}
	t.Fatal("node_exporter could not listen on a free port in 5 attempts")
	return "", ""
}

// grepLines returns the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
