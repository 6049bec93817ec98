//go:build linux

package watch

import (
	"bufio"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/statefile"
)

// The exposition is written from two tables: gateSeries, one family per
// entry with a sample (or several, one per label set) for each gate, and
// checkSeries, the watchdog's own. Adding a series is one entry.
//
// Every sample carries state_dir, the state directory whose journals and
// check.json it comes from: two watchdogs (root's /var/lib/cron-gate and
// a user's ~/.local/state/cron-gate) writing textfiles into one
// node_exporter directory, or scraped as one job, never give two samples
// of the same name and labels. Counters that exist for a gate (runs by
// outcome, skips by every reason of journal.Reasons) are written from 0.

// metricsInput is what a series reads.
type metricsInput struct {
	cfg *gate.Config
	rep *gate.Report
	st  *State // nil: no check yet
}

// cond returns the watchdog's remembered condition of a gate, or nil.
func (in *metricsInput) cond(g *gate.GateStatus, c string) *Cond {
	if in.st == nil {
		return nil
	}
	return in.st.cond(g.Name, c)
}

// gateMetric is one family with samples per gate: each calls emit once
// per sample, with its labels beyond state_dir and gate (name, value
// pairs), or not at all.
type gateMetric struct {
	name, typ, help string
	each            func(in *metricsInput, g *gate.GateStatus, emit func(labels []string, v float64))
}

// lastTime is a gauge of an event's time, when the gate has one.
func lastTime(name, help string, pick func(g *gate.GateStatus) *journal.Event) gateMetric {
	return gateMetric{name, "gauge", help, func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
		if e := pick(g); e != nil {
			emit(nil, seconds(e.Time))
		}
	}}
}

// gateSeries is built on first use: its lastTime entries are closures
// made by a call, which at package level would run in every cron-gate
// start-up, the per-tick run's too.
var gateSeries = sync.OnceValue(func() []gateMetric {
	return []gateMetric{
		lastTime("cron_gate_last_start_timestamp_seconds", "Time the gate's last run started.",
			func(g *gate.GateStatus) *journal.Event { return g.LastStart }),
		lastTime("cron_gate_last_success_timestamp_seconds", "Time the gate's last successful run ended.",
			func(g *gate.GateStatus) *journal.Event { return g.LastSuccess }),
		lastTime("cron_gate_last_failure_timestamp_seconds", "Time the gate's last failed run ended (failure, timeout, signal, start error, vanished).",
			func(g *gate.GateStatus) *journal.Event { return g.LastFailure }),
		lastTime("cron_gate_last_skip_timestamp_seconds", "Time the gate last skipped a run.",
			func(g *gate.GateStatus) *journal.Event { return g.LastSkip }),
		{"cron_gate_last_duration_seconds", "gauge", "Duration of the gate's last finished run.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				if g.LastEnd != nil && !g.LastEnd.Started.IsZero() {
					emit(nil, float64(g.LastEnd.DurationMS)/1000)
				}
			}},
		{"cron_gate_last_exit_code", "gauge", "Exit code of the gate's last finished run.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				if g.LastEnd != nil && g.LastEnd.Exit != nil {
					emit(nil, float64(*g.LastEnd.Exit))
				}
			}},
		{"cron_gate_runs_total", "counter", "Runs of the gate by outcome (success or failure), as the journal's summary counts them.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				emit([]string{"outcome", "success"}, float64(g.Successes))
				emit([]string{"outcome", "failure"}, float64(g.Failures))
			}},
		{"cron_gate_skips_total", "counter", "Runs of the gate skipped or refused, by reason (every reason cron-gate writes, from 0).",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				for _, r := range journal.Reasons {
					emit([]string{"reason", r}, float64(g.Skips[r]))
				}
				for _, r := range sortedKeys(g.Skips) {
					if !slices.Contains(journal.Reasons, r) {
						emit([]string{"reason", r}, float64(g.Skips[r])) // written by hand, or by a later version
					}
				}
			}},
		{"cron_gate_consecutive_failures", "gauge", "Failed runs of the gate since its last success.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				emit(nil, float64(g.ConsecutiveFailures))
			}},
		{"cron_gate_running", "gauge", "Runs of the gate in progress.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				emit(nil, float64(len(g.Running)))
			}},
		{"cron_gate_paused", "gauge", "1 if the gate is paused (config or command line).",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				emit(nil, b2f(g.Pause != nil))
			}},
		{"cron_gate_state", "gauge", "1 for the gate's state as cron-gate status names it, 0 for the others.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				for _, s := range allStates {
					emit([]string{"state", s}, b2f(g.State == s))
				}
			}},
		{"cron_gate_interval_seconds", "gauge", "The gate's configured interval.",
			func(in *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				if iv := in.cfg.Gate(g.Name).Interval; iv > 0 {
					emit(nil, iv.Seconds())
				}
			}},
		{"cron_gate_journal_error", "gauge", "1 if the gate's journal has unreadable records.",
			func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				emit(nil, b2f(g.JournalError != ""))
			}},
		{"cron_gate_condition", "gauge", "1 if the watchdog's last check found the condition bad (stale, failed, unscheduled, skipping, overrun), 0 if not (or no check yet); one sample per condition watched for the gate.",
			func(in *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				for _, c := range Watched(in.cfg, g) {
					e := in.cond(g, c)
					emit([]string{"condition", c}, b2f(e != nil && e.Bad))
				}
			}},
		{"cron_gate_alert", "gauge", "The condition's alert state: 1 for the current one of ok, pending (bad, not alerted yet), alerted, muted (known at install: bad since before the first check, not alerted until remind_after), recovering (recovery not delivered yet).",
			func(in *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
				for _, c := range Watched(in.cfg, g) {
					cur := AlertState(in.cond(g, c))
					for _, s := range alertStates {
						emit([]string{"condition", c, "state", s}, b2f(cur == s))
					}
				}
			}},
	}
})

// checkMetric is one family of the watchdog's own, one sample, written
// once a check has run.
type checkMetric struct {
	name, typ, help string
	value           func(st *State) float64
}

var checkSeries = []checkMetric{
	{"cron_gate_check_last_run_timestamp_seconds", "gauge", "Time of the watchdog's last check.",
		func(st *State) float64 { return seconds(st.Updated) }},
	{"cron_gate_check_runs_total", "counter", "Checks the watchdog has made.",
		func(st *State) float64 { return float64(st.Checks) }},
	{"cron_gate_check_notifications_total", "counter", "Notifications delivered: one per notifier that received one, all notifiers together.",
		func(st *State) float64 { return float64(st.Sent) }},
	{"cron_gate_check_notification_failures_total", "counter", "Notifications that could not be delivered: one per notifier that did not get one (retried at the next check), all notifiers together.",
		func(st *State) float64 { return float64(st.Failed) }},
}

// WriteMetrics writes the Prometheus text exposition (format 0.0.4) of the
// status report and the watchdog's state (nil: no check yet) to w, from
// the tables gateSeries and checkSeries. Every family is written with
// HELP and TYPE, its samples together, gates in the report's order (by
// name); every sample is labelled state_dir (see above). Label values are
// escaped as the format requires (backslash, double quote, newline;
// invalid UTF-8 is replaced). TestMetricsPromtool holds the output to
// Prometheus's own parser and linter, TestMetricsTwoWatchdogs to
// node_exporter reading two watchdogs' textfiles together.
func WriteMetrics(w io.Writer, cfg *gate.Config, rep *gate.Report, st *State) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	in := &metricsInput{cfg: cfg, rep: rep, st: st}
	dir := []string{"state_dir", rep.StateDir}
	head := func(name, typ, help string) {
		bw.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n")
		bw.WriteString("# TYPE " + name + " " + typ + "\n")
	}
	for _, m := range slices.Concat(gateSeries(), blockedSeries) {
		written := false
		for i := range rep.Gates {
			g := &rep.Gates[i]
			m.each(in, g, func(labels []string, v float64) {
				if !written {
					written = true
					head(m.name, m.typ, m.help)
				}
				writeSample(bw, m.name, append([]string{dir[0], dir[1], "gate", g.Name}, labels...), v)
			})
		}
	}
	if st != nil && !st.Updated.IsZero() {
		for _, m := range checkSeries {
			head(m.name, m.typ, m.help)
			writeSample(bw, m.name, dir, m.value(st))
		}
	}
	return bw.Flush()
}

var allStates = []string{gate.StateRunning, gate.StateWaiting, gate.StatePaused, gate.StateError, gate.StateFailing, gate.StateBlocked, gate.StateDone, gate.StateOK, gate.StateSkipped, gate.StateNeverRun}

var alertStates = []string{"ok", "pending", "alerted", "muted", "recovering"}

// AlertState names a condition's alert state: ok (also for nil), pending,
// alerted, recovering or muted — the values of cron_gate_alert's state
// label, and the dashboard's.
func AlertState(e *Cond) string {
	switch {
	case e == nil:
		return "ok"
	case e.Muted:
		return "muted"
	case !e.Bad && len(e.Alerted) > 0:
		return "recovering"
	case len(e.Alerted) > 0:
		return "alerted"
	case e.Bad:
		return "pending"
	}
	return "ok"
}

// writeSample writes `name{k="v",...} value`.
func writeSample(bw *bufio.Writer, name string, labels []string, v float64) {
	bw.WriteString(name)
	if len(labels) > 0 {
		bw.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(labels[i])
			bw.WriteString(`="`)
			bw.WriteString(EscapeLabel(labels[i+1]))
			bw.WriteByte('"')
		}
		bw.WriteByte('}')
	}
	bw.WriteByte(' ')
	bw.WriteString(formatFloat(v))
	bw.WriteByte('\n')
}

// EscapeLabel escapes a label value for the text format: backslash,
// double quote and line feed are written \\, \" and \n; invalid UTF-8 is
// replaced by U+FFFD (label values must be UTF-8).
func EscapeLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes HELP text: backslash and line feed.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// seconds is a Unix time in seconds, to the millisecond.
func seconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1000
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteMetricsFile writes the exposition to path atomically (a temp file
// in the same directory, renamed over it), as node_exporter's textfile
// collector needs: it never sees half a file. The temp file's name starts
// with a dot and does not end in .prom, so the collector ignores it. Both
// are written through the directory's descriptor (package statefile); the
// directory is the operator's choice (a collector's, often owned by its
// own user), so it is taken whoever owns it, as a path given on the
// command line.
func WriteMetricsFile(path string, cfg *gate.Config, rep *gate.Report, st *State) error {
	var b strings.Builder
	if err := WriteMetrics(&b, cfg, rep, st); err != nil {
		return err
	}
	d, err := safeopen.OpenDir(filepath.Dir(path), safeopen.DirOptions{What: "metrics dir", Trust: safeopen.TrustAny})
	if err != nil {
		return err
	}
	defer d.Close()
	return statefile.Write(d, filepath.Base(path), []byte(b.String()), statefile.Options{Perm: 0o644})
}
