//go:build linux

// Command cron-gate runs a cron job's command unless its gate is paused or
// a legacy lock is held, and journals every run; it is also every
// subcommand (status, why, pause, check, serve, ...). See
// docs/cron-gate.md.
//
// This is the binary cron runs on every tick, and one file does every
// local feature. A run whose gate is in the config cache is parsed by the
// fast parser (gate.FastParse) and run from the cached settings
// (gate.LookupGate), without kong or the TOML decoder; everything else —
// a subcommand, help, a usage error, a config whose bytes are not cached
// yet, a gate with a healthchecks_url — goes to package crongate in this
// same process, which parses with kong and decodes the config. Only a
// config with shared pauses ([etcd]) is handed by exec to cron-gate-etcd,
// the companion that links etcd's client.
package main

import (
	"os"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/crongate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	sigs := runner.Notify()
	inv, how := cachedRun(args)
	switch how {
	case runCached:
		inv.Sigs = sigs
		return gate.Run(inv)
	case runFull:
		return crongate.Main(args, nil)
	}
	return crongate.ExecEtcd(args, sigs)
}

// How a command line is run.
const (
	runCached = iota // from the config cache (cachedRun's inv)
	runFull          // by package crongate: kong, the TOML decoder
	runEtcd          // by cron-gate-etcd, a cached config with [etcd]
)

// cachedRun returns the run a command line asks for when the cache has
// what it needs (runCached): a fast-parsed, valid run line whose config is
// unreadable (refused and recorded by gate.Run), absent, or cached, for a
// gate without healthchecks pings, and without shared pauses. A cached
// config with [etcd] is runEtcd (straight to cron-gate-etcd, without
// decoding the config first); anything else is runFull. A line cron-gate
// trigger runs (gate.TriggerEnv set) is runFull: package crongate records
// it as manual and keeps the variable from the command.
func cachedRun(args []string) (inv gate.Invocation, how int) {
	flags, command, isRun := runner.SplitCommand(args)
	if _, manual := os.LookupEnv(gate.TriggerEnv); !isRun || manual {
		return inv, runFull
	}
	ra, ok := gate.FastParse(flags)
	if !ok || ra.Check(command) != "" || gate.EmptyConfig(flags) != "" {
		return inv, runFull
	}
	path, missingOK := gate.ConfigPath(ra.Config)
	cfg, miss, err := gate.LookupGate(path, missingOK, ra.Name)
	switch {
	case miss != nil || (cfg != nil && cfg.Gate(ra.Name).HealthchecksURL != ""):
		return inv, runFull
	case cfg != nil && cfg.Etcd.Set():
		return inv, runEtcd
	}
	inv = ra.Invocation(command)
	inv.Config, inv.ConfigErr = cfg, err
	inv.Out = &safetext.Printer{Prog: "cron-gate", Quiet: ra.Quiet, Verbose: ra.Verbose, ReportSkips: cfg != nil && cfg.ReportSkips}
	return inv, runCached
}
