//go:build linux

// Package watch is cron-gate's watchdog, `cron-gate check`: run from cron
// every few minutes, it alerts once when a gate goes stale, fails or is no
// longer scheduled, and once more when that clears (docs/watchdog.md).
//
// It does not judge a gate's state itself: every fact about a gate comes
// from gate.Status (the one judgement the status view and the dashboard
// share) — the last success, whether the last run failed, the pause and
// the resume time. What it adds is what only a watchdog knows: the world
// outside the state dir (the crontab, systemd timers, a worker's own
// failure flag, Probe), time (stale), and memory (State: how many checks in
// a row saw a condition, and whom it has told).
//
// Files:
//
//	observe.go   the conditions of each gate at one check (Observation)
//	machine.go   the alert state machine (step), pure and clock-free
//	check.go     one check: lock, observe, step, notify, save (Checker)
//	state.go     the persisted state, STATE_DIR/check.json
//	probe.go     crontab, cron.d, systemctl, failure state files (SystemProbe)
//	notify.go    command and webhook notifiers
//	metrics.go   the Prometheus text exposition
package watch
