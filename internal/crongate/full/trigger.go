//go:build linux

package full

// cron-gate trigger NAME: run the gate's command now, through the gate
// (docs/cron-gate.md, "Run now"). The command is the config's `command`,
// else the one its crontab line gives cron-gate (run by /bin/sh -c, as
// cron runs it); the run is gate.Run's, with every check a cron tick
// makes, recorded as manual with who asked.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/pauses"
	"github.com/crongate/crongate/internal/crongate"
	"github.com/crongate/crongate/internal/hcping"
	"github.com/crongate/crongate/internal/pausectl"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// TriggerCmd is `cron-gate trigger NAME`.
type TriggerCmd struct {
	Name  string `arg:"" help:"Gate name."`
	Force bool   `help:"Run even while the gate is paused (the journal says so); every other check still applies."`
	By    string `hidden:"" placeholder:"WHO" help:"Who asked (the dashboard's run now); default: the user and host."`
}

// check refuses a --by that is not one printable line.
func (c *TriggerCmd) check([]string) error {
	if c.By != "" && (len(c.By) > 200 || safetext.Line(c.By) != c.By) {
		return usageError{"--by must be one printable line of at most 200 bytes"}
	}
	return nil
}

// Run is `cron-gate trigger`.
func (c *TriggerCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(trigger(cfg, e, c))
}

// triggerCommand is what a trigger runs: the argv and the run-form
// settings of the gate's crontab line (timeout, kill-after, once_per).
type triggerCommand struct {
	argv []string
	ra   crongate.RunArgs
	from string // for messages: "config" or "crontab line N"
}

func trigger(cfg *gate.Config, e *env, c *TriggerCmd) int {
	if err := gate.CheckName(c.Name); err != nil {
		e.out.Errorf("%v", err)
		return runner.ExitFailure
	}
	if err := pausectl.CheckKnown(cfg, e.ps, c.Name); err != nil {
		if u, ok := errors.AsType[*pausectl.UnknownGateError](err); ok {
			e.out.Errorf("trigger %s: %s", c.Name, u.What())
			return runner.ExitFailure
		}
	}
	tc, err := commandOf(cfg, cfg.Gate(c.Name))
	if err != nil {
		e.out.Errorf("trigger %s: %v", c.Name, err)
		e.out.Hintf("set command = [\"PROGRAM\", \"ARG\", ...] in [gates.%s]", c.Name)
		return runner.ExitFailure
	}
	by := c.By
	if by == "" {
		by = pauses.Who()
	}
	return gate.Run(gate.Invocation{
		Gate: c.Name, Argv: tc.argv, Config: cfg, Pauses: e.ps,
		Timeout: tc.ra.Timeout, KillAfter: tc.ra.KillAfter, OncePer: tc.ra.OncePer,
		Out: e.out, Sigs: e.sigs, Observer: hcping.New, Locks: crongate.BusyLocks,
		ManualBy: by, Force: c.Force,
	})
}

// commandOf finds the gate's command: the config's `command`, else its
// first crontab line whose command is `cron-gate [FLAGS] NAME -- COMMAND`
// (COMMAND run by /bin/sh -c, as cron runs it; the line's --timeout,
// --kill-after and --once-per apply).
func commandOf(cfg *gate.Config, gc *gate.GateConfig) (*triggerCommand, error) {
	if gc.Command != nil {
		return &triggerCommand{argv: gc.Command, ra: crongate.RunArgs{KillAfter: crongate.DefaultKillAfter}, from: "config"}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	scan, err := watch.NewSystemProbe(cfg.Check).Crontabs(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("no command in the config, and the crontab cannot be read: %v", err)
	case scan == nil:
		return nil, errors.New("no command in the config, and no crontab is read (crontab_command = [], cron_d = [])")
	}
	runs, _ := scan.Find(gc.Name) // only lines cron runs
	var unread []string
	for _, j := range runs {
		if j.Command == "" {
			unread = append(unread, j.Where())
			continue
		}
		if strings.Contains(j.Command, "%") {
			// cron turns % into newlines and the rest into stdin.
			unread = append(unread, j.Where()+" (it uses %, which cron turns into the command's input)")
			continue
		}
		ra, ok := crongate.FastParse(append(append([]string{}, j.Flags...), gc.Name))
		if !ok {
			unread = append(unread, fmt.Sprintf("%s (its flags %q)", j.Where(), strings.Join(j.Flags, " ")))
			continue
		}
		return &triggerCommand{argv: []string{"/bin/sh", "-c", j.Command}, ra: ra, from: j.Where()}, nil
	}
	if len(unread) > 0 {
		return nil, fmt.Errorf("no command in the config, and cron-gate cannot take the command from %s (only `cron-gate [FLAGS] %s -- COMMAND` lines)", strings.Join(unread, ", "), gc.Name)
	}
	return nil, fmt.Errorf("no command in the config, and no cron-gate %s line that cron runs in %s", gc.Name, scan.Where)
}

// startTrigger is the dashboard's "run now": it checks that the gate's
// command can be found, then starts `cron-gate trigger NAME --by WHO`
// (this binary, with the same --config) in its own session, its input
// and output on /dev/null (the journal, and the output log with
// log_output, keep what happened), and returns at once. The child is
// waited for in the background; it outlives a stopped serve.
func startTrigger(cfgFlag string, cfg *gate.Config, name, who string) (string, error) {
	if _, err := commandOf(cfg, cfg.Gate(name)); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	args := []string{}
	if cfgFlag != "" {
		args = append(args, "--config", cfgFlag)
	}
	args = append(args, "-q", "trigger", name, "--by", who)
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go cmd.Wait()
	return fmt.Sprintf("started a run of gate %s through the gate (its state shows how it goes)", name), nil
}
