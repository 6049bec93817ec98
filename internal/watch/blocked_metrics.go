//go:build linux

package watch

import (
	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
)

// blockReasons are the reasons cron_gate_blocked has a series for: every
// reason a gate skips for but a pause (a paused gate is not blocked).
var blockReasons = []string{journal.ReasonBusy, journal.ReasonLegacyLock, journal.ReasonLegacyPidfile, journal.ReasonCoordinatorDown}

// writeBlockedMetrics writes the series of blocked and overrunning gates
// (issue 16), kept together: the state machine's new conditions come
// with cron_gate_condition and cron_gate_alert, the new state with
// cron_gate_state.
func writeBlockedMetrics(family func(name, typ, help string, each func(g *gate.GateStatus, emit func(labels []string, v float64))), rep *gate.Report) {
	family("cron_gate_blocked", "gauge", "1 for the reason of the gate's last skip while it is blocked (its recent attempts were all skips), 0 for the others.",
		func(g *gate.GateStatus, emit func([]string, float64)) {
			for _, r := range blockReasons {
				emit([]string{"reason", r}, b2f(g.Blocked() && g.Skipping.Reason == r))
			}
		})
	family("cron_gate_consecutive_skips", "gauge", "Attempts of the gate skipped in a row (paused skips not counted) since its last attempt that ran.",
		func(g *gate.GateStatus, emit func([]string, float64)) { emit(nil, float64(g.ConsecutiveSkips)) })
	family("cron_gate_skipping_since_timestamp_seconds", "gauge", "Time of the first skip of the gate's current run of skips.",
		func(g *gate.GateStatus, emit func([]string, float64)) {
			if g.Skipping != nil {
				emit(nil, seconds(g.Skipping.Since))
			}
		})
	family("cron_gate_running_seconds", "gauge", "How long the gate's oldest run in progress has been running (0: none).",
		func(g *gate.GateStatus, emit func([]string, float64)) {
			d := 0.0
			if len(g.Running) > 0 {
				d = max(0, rep.Generated.Sub(g.Running[0].Since).Seconds())
			}
			emit(nil, d)
		})
	family("cron_gate_overrun", "gauge", "1 if a run of the gate in progress has run longer than its max_runtime.",
		func(g *gate.GateStatus, emit func([]string, float64)) {
			if g.MaxRuntime != "" {
				emit(nil, b2f(g.Overrun))
			}
		})
}
