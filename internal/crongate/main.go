//go:build linux

// Package crongate is the cron-gate command: every subcommand, kong's parser
// and the TOML decoder, in the binaries cron-gate and cron-gate-etcd (the
// same with the etcd client, for configs with shared pauses). cron-gate
// (cmd/cron-gate) calls Main for every line but a run whose config is
// cached. See docs/design.md, "One cron-gate binary".
package crongate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// OpenShared opens the shared pause store of a config's [etcd] section; the
// returned func closes it. Only cron-gate-etcd has one.
type OpenShared func(cfg *gate.Config) (gate.PauseStore, func(), error)

// Main is cron-gate's command for every line but a cached run, and with
// open set, cron-gate-etcd's.
// Without open, a config that names an etcd cluster is handed to
// cron-gate-etcd by exec, with the same arguments.
func Main(args []string, open OpenShared) int {
	sigs := runner.Notify()
	out := &safetext.Printer{Prog: "cron-gate"}
	code, done := run(args, open, sigs, out)
	if done {
		return code
	}
	return ExecEtcd(args, sigs)
}

// ExecEtcd hands the command line args to cron-gate-etcd by exec (same
// PID, same arguments), for a config that names an etcd cluster; sigs is
// runner.Notify's channel. It returns only when the exec did not happen:
// 128+N for a signal that came first, else 125 with what to install.
func ExecEtcd(args []string, sigs chan os.Signal) int {
	if code, stop := runner.HandOff(sigs); stop {
		return code
	}
	out := &safetext.Printer{Prog: "cron-gate"}
	err := runner.ExecCompanion(gate.EtcdBinary, "cron-gate", args)
	if errors.Is(err, runner.ErrCompanionNotFound) {
		err = fmt.Errorf("the config names an etcd cluster ([etcd]), which needs %s, not installed next to cron-gate or on PATH", gate.EtcdBinary)
		out.Errorf("%v", err)
		out.Hintf("%s", runner.CompanionHint(gate.EtcdBinary))
	} else {
		out.Errorf("%v", err)
	}
	// A run is recorded as refused, in the config's state dir.
	if flags, command, isRun := runner.SplitCommand(args); isRun {
		if l, ok := gate.FastParse(flags); ok && l.Check(command) == "" {
			inv := l.Invocation(command)
			inv.Config, _ = loadConfig(l.Config, l.Name)
			gate.RecordRefused(inv, err)
		}
	}
	return runner.ExitFailure
}

// etcdUnchanged reports whether cfg can do with the shared store opened
// for the [etcd] section opened (nil: none was opened). A config without
// [etcd] needs none; one with [etcd] needs a store opened for the same
// keys (endpoints, prefix, timeout, on_coordinator_down, TLS, auth): a pause must not go
// to one cluster or prefix while runs read another (serve re-reads its
// config).
func etcdUnchanged(cfg *gate.Config, opened *gate.EtcdConfig) bool {
	if cfg == nil || !cfg.Etcd.Set() {
		return true
	}
	// Every key counts: TLS and auth too.
	return opened != nil && reflect.DeepEqual(cfg.Etcd, *opened)
}

// run returns done == false when the line must be handed to cron-gate-etcd.
func run(args []string, open OpenShared, sigs chan os.Signal, out *safetext.Printer) (code int, done bool) {
	p, err := parse(args, os.Stdout, os.Exit)
	if err != nil {
		out.Errorf("%v", err)
		out.Hintf("see cron-gate --help")
		return runner.ExitFailure, true
	}
	out.Quiet, out.Verbose = p.Quiet, p.Verbose
	e := &env{cli: &p.CLI, command: p.command, open: open, out: out, sigs: sigs}
	defer e.close()
	err = p.run(e)
	if ec, ok := errors.AsType[exitCode](err); ok {
		return int(ec), true
	}
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, errHandOff):
		return 0, false
	}
	out.Errorf("%v", err)
	if h := gate.ConfigHint(err); h != "" {
		out.Hintf("%s", h)
	}
	return runner.ExitFailure, true
}

// loadConfig loads --config, else $CRON_GATE_CONFIG (kong or fastParse put
// it in path), else the default path, where a missing file is an empty
// config. With a gate name (the run path) it loads through the cache and
// returns only that gate.
func loadConfig(path, gateName string) (*gate.Config, error) {
	path, missingOK := gate.ConfigPath(path)
	if gateName != "" {
		return gateconf.LoadGate(path, missingOK, gateName)
	}
	return gateconf.Load(path, missingOK)
}

func pause(cfg *gate.Config, ps gate.Pauses, c *PauseCmd, out *safetext.Printer) int {
	if err := gate.CheckName(c.Name); err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	now := time.Now()
	pz := gate.Pause{Reason: c.Reason}
	switch {
	case c.For > 0:
		pz.Until = now.Add(c.For)
	case c.Until != "":
		t, err := parseUntil(c.Until, now)
		if err != nil {
			out.Errorf("%v", err)
			return runner.ExitFailure
		}
		if !t.After(now) {
			out.Errorf("--until %s is in the past", c.Until)
			return runner.ExitFailure
		}
		pz.Until = t
	}
	if err := Pause(cfg, ps, c.Name, pz, c.Force); err != nil {
		out.Errorf("%v", err)
		if _, ok := errors.AsType[*UnknownGateError](err); ok {
			out.Hintf("check the name; to pause gate %s ahead of its first run, add --force", c.Name)
		}
		return runner.ExitFailure
	}
	msg := "paused gate " + c.Name
	if !pz.Until.IsZero() {
		msg += " until " + pz.Until.Format(time.RFC3339)
	}
	out.Donef("%s", msg)
	return 0
}

// resume is force-resume: it also lifts a pause set in the config.
func resume(cfg *gate.Config, ps gate.Pauses, name string, out *safetext.Printer) int {
	r, err := Resume(cfg, ps, gateconf.SetPaused, name, true)
	if err != nil {
		out.Errorf("%v", err)
		if ee, ok := errors.AsType[*EditError](err); ok {
			out.Hintf("%s", ee.Hint())
		}
		return runner.ExitFailure
	}
	if r.Warning != "" {
		out.Warnf("%s", r.Warning)
	}
	out.Donef("%s", r.Msg)
	return 0
}

func status(cfg *gate.Config, ps gate.Pauses, c *StatusCmd, out *safetext.Printer) int {
	var names []string
	if c.Name != "" {
		if err := gate.CheckName(c.Name); err != nil {
			out.Errorf("%v", err)
			return runner.ExitFailure
		}
		names = []string{c.Name}
	}
	rep, err := gate.Status(cfg, ps, time.Now(), names...)
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	for _, w := range rep.Warnings {
		out.Warnf("%s", w)
	}
	if c.JSON {
		if err := printJSON(os.Stdout, rep); err != nil {
			out.Errorf("%v", err)
			return runner.ExitFailure
		}
		return 0
	}
	printTable(os.Stdout, rep, time.Now())
	if c.Name != "" {
		printDetail(os.Stdout, rep.Gates[0])
		if c.Output {
			text, err := journal.LastOutputOf(gate.StateDirFor(cfg), c.Name)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				out.Errorf("output of gate %s: %v", c.Name, err)
				return runner.ExitFailure
			}
			if text == "" {
				fmt.Println("(no output kept; set log_output = true for this gate)")
			}
			printOutput(os.Stdout, text)
		}
	}
	return 0
}
