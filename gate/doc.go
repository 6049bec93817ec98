//go:build linux

// Package gate holds cron-gate's gates: the config's types, defaults and
// invariants (config.go; the TOML is decoded and edited by package
// gateconf, and the validated gate comes from a cache, configcache.go, so
// that cron-gate's per-tick binary links no TOML library), gate names
// (name.go), the decision and recording of one run (run.go, record.go),
// and the status judgement (status.go) that the status view, the
// watchdog and the dashboard share.
//
// Its neighbours, each with one concern:
//
//	gate/journal       the per-gate run journal, its summary and the output log
//	internal/statefile opening the state dir safely, and writing its files whole
//
// The pause stores are passed in (Pauses: this host's pauses.json and,
// with [etcd], the store every host shares), never kept in a Config: a
// Config is plain data, safe to share once loaded.
//
// State lives under the state dir (StateDirFor):
//
//	pauses.json               command-line pauses (and resume times), by gate (PauseFile)
//	check.json                the watchdog's alert state (package watch)
//	gates/NAME/journal.jsonl  one JSON record per line, appended and fsynced (package journal)
//	gates/NAME/journal.1.jsonl  the previous journal after rotation
//	gates/NAME/summary.json   the digest: last start/end/success/failure/skip
//	gates/NAME/output.log     last runs' output, when log_output is on (output.1.log: the one before)
//	gates/NAME/.lock          the gate's short lock (journal appends, output log)
//	gates/NAME/period.lock    the gate's period claim (once_per), held for a run
//	.pauses.lock, .config.lock, .check.lock  short locks of pauses.json, the config's edits, check.json
//
// No lock file is ever deleted. Every lock file is the state dir owner's
// alone (0600, checked at each open: lockfile's OpenPrivate), since
// flock(2) works on a descriptor opened read-only; a wait for one is
// bounded (statefile.Locked). A state dir is one user's
// (docs/security.md).
package gate
