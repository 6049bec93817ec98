//go:build linux

package crongate

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/hcping"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Each command's Run method, called by kong's ctx.Run (or, for a run line
// parsed by the fast path, directly): it loads what the command needs and
// calls the command's implementation. Run returns nil for exit 0, an
// exitCode for any other code, errHandOff when the line must go to
// cron-gate-etcd, or an error, printed as cron-gate's own failure (125).

// env is what every Run method gets.
type env struct {
	cli     *CLI
	command []string // after "--", for the run command
	open    OpenShared
	out     *safetext.Printer
	sigs    chan os.Signal
	closers []func()
	// ps is the pause stores for every command: this host's, and with
	// [etcd] the cluster's shared store opened by load.
	ps gate.Pauses
	// kong is kong's parse of the line (nil on the fast path), for help.
	kong *kong.Context
}

// exitCode is a command's exit code other than 0.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

// exit is code as Run's result.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitCode(code)
}

// errHandOff: the config names an etcd cluster and this binary has no etcd
// client (cron-gate); Main execs cron-gate-etcd with the same line.
var errHandOff = errors.New("the config names an etcd cluster")

// load loads the config (through the cache and with only that gate when
// name is not ""), and when it names an etcd cluster, opens the cluster's
// shared pause store (closed by close), or hands the line off.
func (e *env) load(name string) (cfg *gate.Config, cfgErr error, handOff bool) {
	cfg, cfgErr = loadConfig(e.cli.Config, name)
	if cfg != nil && cfg.Etcd.Set() {
		if e.open == nil {
			return nil, nil, true
		}
		s, closeFn, err := e.open(cfg)
		if err != nil {
			cfg, cfgErr = nil, fmt.Errorf("config %s: [etcd]: %v", cfg.Path, err)
		} else {
			e.closers = append(e.closers, closeFn)
			e.ps.Shared = s
			if c, ok := s.(gate.PeriodClaims); ok {
				e.ps.Claims = c // once_per across hosts (etcdpause)
			}
		}
	}
	return cfg, cfgErr, false
}

// config is load for the subcommands, which need a usable config.
func (e *env) config() (*gate.Config, error) {
	cfg, err, handOff := e.load("")
	if handOff {
		return nil, errHandOff
	}
	return cfg, err
}

// close closes what load opened.
func (e *env) close() {
	for _, f := range e.closers {
		f()
	}
}

// Run is `cron-gate NAME -- COMMAND`: a config that cannot be used is
// gate.Run's to refuse and record.
func (c *RunCmd) Run(e *env) error {
	cfg, cfgErr, handOff := e.load(c.Name)
	if handOff {
		return errHandOff
	}
	e.out.ReportSkips = cfg != nil && cfg.ReportSkips
	inv := c.Invocation(e.command)
	inv.Config, inv.ConfigErr, inv.Pauses, inv.Out, inv.Sigs, inv.Observer = cfg, cfgErr, e.ps, e.out, e.sigs, hcping.New
	// A line cron-gate trigger runs now (trigger.go): a manual run.
	if m := takeTrigger(c.Name, e.cli.Config); m != nil {
		inv.ManualBy, inv.Force = m.By, m.Force
		e.out.ReportSkips = e.out.ReportSkips || m.Report
	}
	return exit(gate.Run(inv))
}

// Run is `cron-gate edit`. It loads no config: a broken one is edited to
// be fixed, and an [etcd] section needs no cluster here.
func (c *EditCmd) Run(e *env) error {
	return exit(editConfig(e.cli.Config, e.out, e.sigs))
}

// Run is `cron-gate pause`.
func (c *PauseCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(pause(cfg, e.ps, c, e.out))
}

// Run is `cron-gate resume`.
func (c *ResumeCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(resume(cfg, e.ps, c.Name, e.out))
}

// Run is `cron-gate status`.
func (c *StatusCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(status(cfg, e.ps, c, e.out))
}

// Run is `cron-gate check`. check and serve handle signals themselves
// (check saves what it delivered and exits 128+N, serve stops gracefully
// and exits 0): signals go to e.sigs from now on, not to runner's guard.
func (c *CheckCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	runner.Disarm()
	return exit(check(cfg, e.ps, c, e.out, e.sigs))
}

// Run is `cron-gate metrics`.
func (c *MetricsCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(metrics(cfg, e.ps, e.out))
}

// Run is `cron-gate serve` (see CheckCmd.Run for its signals).
func (c *ServeCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	runner.Disarm()
	return exit(serve(e.cli.Config, cfg, e.ps, c, e.out, e.sigs))
}

// Run is `cron-gate help [COMMAND]`: the help --help prints, of the
// command named (125 for a command that does not exist).
func (c *HelpCmd) Run(e *env) error {
	ctx, err := kong.Trace(e.kong.Kong, c.Command)
	if err == nil {
		err = ctx.Error
	}
	if err != nil {
		return usageError{fmt.Sprintf("help %s: %v", strings.Join(c.Command, " "), err)}
	}
	return ctx.PrintUsage(false)
}

// Run is `cron-gate version`.
func (c *VersionCmd) Run(*env) error {
	fmt.Println("cron-gate " + runner.BuildString())
	return nil
}
