//go:build linux

// Command cron-gate runs a cron job's command unless its gate is paused or
// a legacy lock is held, and journals every run. See docs/cron-gate.md.
//
// This is the binary cron runs on every tick. It links no CLI library, no
// TOML decoder and no network code: it parses the crontab run forms itself
// (gate.FastParse) and takes the gate's settings from the config
// cache (gate.LookupGate). Everything else — a subcommand, help, a usage
// error, a config whose bytes are not cached yet, a gate with a
// healthchecks_url — is handed by exec to cron-gate-full, and a cached
// config with shared pauses ([etcd]) to cron-gate-etcd; both do the same
// run with the same code, so all give the same result.
package main

import (
	"errors"
	"os"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	sigs := runner.Notify()
	inv, to := cachedRun(args)
	if to == "" {
		inv.Sigs = sigs
		return gate.Run(inv)
	}
	if code, stop := runner.HandOff(sigs); stop {
		return code
	}
	out := &safetext.Printer{Prog: "cron-gate"}
	err := runner.ExecCompanion(to, "cron-gate", args)
	switch {
	case errors.Is(err, runner.ErrCompanionNotFound) && to == gate.EtcdBinary:
		out.Errorf("the config names an etcd cluster ([etcd]), which needs %s, not installed next to cron-gate or on PATH", to)
		out.Hintf("%s", runner.CompanionHint(to))
	case errors.Is(err, runner.ErrCompanionNotFound):
		out.Errorf("this command line needs %s (subcommands, help, errors, a config not decoded before), which is not installed next to cron-gate or on PATH", to)
		out.Hintf("%s", runner.CompanionHint(to))
	default:
		out.Errorf("%v", err)
	}
	return runner.ExitFailure
}

// cachedRun returns the run a command line asks for when this binary can
// do it alone (to == ""): a fast-parsed, valid run line whose config is
// unreadable (refused and recorded by gate.Run), absent, or cached, for a
// gate without healthchecks pings, and without shared pauses. Otherwise
// it names the binary to hand the line to: cron-gate-etcd for a cached
// config with [etcd] (skipping cron-gate-full's hop), else cron-gate-full.
// A line cron-gate trigger runs (gate.TriggerEnv set) goes to
// cron-gate-full, which records it as manual and keeps the variable from
// the command.
func cachedRun(args []string) (inv gate.Invocation, to string) {
	flags, command, isRun := runner.SplitCommand(args)
	if _, manual := os.LookupEnv(gate.TriggerEnv); !isRun || manual {
		return inv, gate.FullBinary
	}
	ra, ok := gate.FastParse(flags)
	if !ok || ra.Check(command) != "" {
		return inv, gate.FullBinary
	}
	path, missingOK := gate.ConfigPath(ra.Config)
	cfg, miss, err := gate.LookupGate(path, missingOK, ra.Name)
	switch {
	case miss != nil || (cfg != nil && cfg.Gate(ra.Name).HealthchecksURL != ""):
		return inv, gate.FullBinary
	case cfg != nil && cfg.Etcd.Set():
		return inv, gate.EtcdBinary
	}
	return gate.Invocation{
		Gate: ra.Name, Argv: command, Config: cfg, ConfigErr: err,
		Timeout: ra.Timeout, KillAfter: ra.KillAfter, OncePer: ra.OncePer, Jitter: ra.Jitter,
		Out: &safetext.Printer{Prog: "cron-gate", Quiet: ra.Quiet, Verbose: ra.Verbose, ReportSkips: cfg != nil && cfg.ReportSkips},
	}, ""
}
