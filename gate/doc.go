//go:build linux

// Package gate holds cron-gate's gates: the config's types, defaults and
// invariants (config.go; the TOML is decoded and edited by package
// gateconf, and the validated gate comes from a cache, configcache.go, so
// that cron-gate's per-tick binary links no TOML library), pauses set from
// the command line
// (pause.go), legacy lock and pidfile probes (legacy.go), the per-gate run
// journal and summary (journal.go), the optional output log (outputlog.go),
// the decision and recording of one run (run.go), and the status judgement
// (status.go) that the status view, the watchdog and the dashboard share.
//
// State lives under the state dir:
//
//	pauses.json               command-line pauses (and resume times), by gate
//	check.json                the watchdog's alert state (package watch)
//	gates/NAME/journal.jsonl  one JSON record per line, appended and fsynced
//	gates/NAME/journal.1.jsonl  the previous journal after rotation
//	gates/NAME/summary.json   the digest: last start/end/success/failure/skip
//	gates/NAME/output.log     last runs' output, when log_output is on
//	.lock, .pauses.lock, .config.lock, .check.lock  short locks; never deleted
package gate
