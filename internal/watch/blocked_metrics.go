//go:build linux

package watch

import (
	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
)

// blockReasons are the reasons cron_gate_blocked has a series for: every
// reason a gate skips for but a pause (a paused gate is not blocked).
var blockReasons = []string{journal.ReasonBusy, journal.ReasonLegacyLock, journal.ReasonLegacyPidfile, journal.ReasonCoordinatorDown}

// blockedSeries are the series of blocked and overrunning gates, kept
// together and written after gateSeries: the state machine's new
// conditions come with cron_gate_condition and cron_gate_alert, the new
// state with cron_gate_state.
var blockedSeries = []gateMetric{
	{"cron_gate_blocked", "gauge", "1 for the reason of the gate's last skip while it is blocked (its recent attempts were all skips), 0 for the others.",
		func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
			for _, r := range blockReasons {
				emit([]string{"reason", r}, b2f(g.Blocked() && g.Skipping.Reason == r))
			}
		}},
	{"cron_gate_consecutive_skips", "gauge", "Attempts of the gate skipped in a row (paused skips not counted) since its last attempt that ran.",
		func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
			emit(nil, float64(g.ConsecutiveSkips))
		}},
	{"cron_gate_skipping_since_timestamp_seconds", "gauge", "Time of the first skip of the gate's current run of skips.",
		func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
			if g.Skipping != nil {
				emit(nil, seconds(g.Skipping.Since))
			}
		}},
	{"cron_gate_running_seconds", "gauge", "How long the gate's oldest run in progress has been running (0: none).",
		func(in *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
			d := 0.0
			if len(g.Running) > 0 {
				d = max(0, in.rep.Generated.Sub(g.Running[0].Since).Seconds())
			}
			emit(nil, d)
		}},
	{"cron_gate_overrun", "gauge", "1 if a run of the gate in progress has run longer than its max_runtime.",
		func(_ *metricsInput, g *gate.GateStatus, emit func([]string, float64)) {
			if g.MaxRuntime != "" {
				emit(nil, b2f(g.Overrun))
			}
		}},
}
