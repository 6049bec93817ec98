//go:build linux

package crongate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/runner/kongduration"
)

// CLI is cron-gate's command line. `cron-gate [flags] NAME -- COMMAND` is
// the run command; main inserts the hidden "run" subcommand for kong.
type CLI struct {
	gate.GlobalFlags
	Version kong.VersionFlag `help:"Print the version and exit."`

	Run     RunCmd     `cmd:"" hidden:"" help:"Run COMMAND through gate NAME (the default: cron-gate NAME -- COMMAND)."`
	Pause   PauseCmd   `cmd:"" help:"Pause a gate: its runs are skipped until it is resumed or the pause expires."`
	Resume  ResumeCmd  `cmd:"" help:"Resume a gate paused from the command line or in the config."`
	Status  StatusCmd  `cmd:"" help:"Show the state of every gate, or of one."`
	Trigger TriggerCmd `cmd:"" help:"Do now what cron would do with the gate's crontab line (as its owner, with cron's environment, in HOME), or run its config command through the gate; recorded as a manual run."`
	Why     WhyCmd     `cmd:"" help:"Say in words why a gate did or did not run: its last attempts, what stops it now, when cron next tries."`
	Edit    EditCmd    `cmd:"" help:"Edit the config safely: a copy in $VISUAL or $EDITOR (else vi), checked, then atomically replaced, under the config lock."`
	Adopt   AdoptCmd   `cmd:"" help:"Put a gate in front of every job of a crontab: print the diff; --apply installs it after a backup, --declare adds the gates to the config."`

	// The watchdog (internal/watch/, check.go, metrics.go).
	Check   CheckCmd   `cmd:"" help:"Watchdog (run it from cron): alert once when a gate is stale, failing or unscheduled, and once when it recovers."`
	Metrics MetricsCmd `cmd:"" help:"Print every gate's metrics in the Prometheus text format."`

	// The dashboard (internal/dashboard/, serve.go).
	Serve ServeCmd `cmd:"" help:"Serve the dashboard: every gate's state, pause and resume buttons, /api/summary, /metrics."`

	Help        HelpCmd    `cmd:"" help:"Show this help, or a command's (cron-gate help pause)."`
	VersionInfo VersionCmd `cmd:"" name:"version" help:"Print the version."`
}

// HelpCmd is `cron-gate help [COMMAND]`: what --help prints.
type HelpCmd struct {
	Command []string `arg:"" optional:"" help:"The command, as typed."`
}

// VersionCmd is `cron-gate version`: what --version prints.
type VersionCmd struct{}

// ServeCmd is `cron-gate serve` (serve.go).
type ServeCmd struct {
	Listen string `placeholder:"HOST:PORT" help:"Address to listen on (default: [serve] listen, else 127.0.0.1:8371). Not loopback: an auth token is required."`
}

// RunCmd is `cron-gate NAME -- COMMAND`.
type RunCmd struct {
	gate.RunFlags
}

// PauseCmd is `cron-gate pause NAME`.
type PauseCmd struct {
	Name   string        `arg:"" help:"Gate name."`
	For    time.Duration `placeholder:"DURATION" xor:"expiry" help:"Pause for this long (90m, 2h, 3d), then run again by itself."`
	Until  string        `placeholder:"TIME" xor:"expiry" help:"Pause until TIME (RFC 3339, or 'YYYY-MM-DD HH:MM' local time)."`
	Reason string        `placeholder:"TEXT" help:"Why (shown by status)."`
	Force  bool          `help:"Pause even a name that is not declared and has no records (a gate paused ahead of its first run); without it such a name is refused as a likely typo."`
}

// ResumeCmd is `cron-gate resume NAME`.
type ResumeCmd struct {
	Name string `arg:"" help:"Gate name."`
}

// StatusCmd is `cron-gate status [NAME]`.
type StatusCmd struct {
	Name   string `arg:"" optional:"" help:"Only this gate."`
	JSON   bool   `help:"Print the documented JSON instead of a table."`
	Output bool   `help:"With NAME: also print the last run's output (log_output)."`
}

// CheckCmd is `cron-gate check` (check.go).
type CheckCmd struct {
	DryRun      bool   `help:"Print what would be sent; send nothing, change no state."`
	JSON        bool   `help:"Print the documented JSON of the check."`
	MetricsFile string `placeholder:"PATH" help:"Also write the metrics there, atomically (node_exporter's textfile collector); overrides [check] metrics_file."`
}

// MetricsCmd is `cron-gate metrics` (metrics.go).
type MetricsCmd struct{}

const description = `Run a cron job's command unless its gate is paused or an old process still
holds its legacy lock, and record every run, skip and failure.

  cron-gate [--config FILE] [-q] [-v] [--timeout D] [--kill-after D] [--once-per P] [--jitter D] [--chronic] NAME -- COMMAND [ARG...]
  cron-gate pause NAME [--for D | --until TIME] [--reason TEXT] [--force]
  cron-gate resume NAME
  cron-gate status [NAME] [--json] [--output]
  cron-gate why NAME [--json]
  cron-gate trigger NAME [--force]
  cron-gate edit
  cron-gate adopt [--file FILE [--system] | --user USER] [--name LINE=NAME] [--apply] [--declare]
  cron-gate check [--dry-run] [--json] [--metrics-file PATH]
  cron-gate metrics
  cron-gate serve [--listen HOST:PORT]
  cron-gate help [COMMAND]
  cron-gate version

A duration D is 90m, 2h30m, 1.5h or 3d (d: 24 hours).

Exit codes: the command's own; 75 (skip_code) skipped; 124 timed out;
125 cron-gate's own failure (bad usage, unusable config); 126 not
executable; 127 not found; 128+N the command died of signal N.
check: 0 checked; 1 checked, but a notification could not be delivered
(retried at the next check); 125 could not check. edit: 0 saved (or no
changes); 125 not saved. adopt: 0 diff printed (or installed); 125 not
installed.`

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parsed is the outcome of parsing: the CLI, the command after "--", and
// how to run the selected command: kong's ctx.Run, which calls its Run
// method (commands.go), or on the fast path RunCmd.Run itself.
type parsed struct {
	CLI
	command []string
	run     func(e *env) error
}

// checker is a command whose arguments need a check kong cannot make.
type checker interface{ check(command []string) error }

// parse parses args. A command line with "--" is a run; the common run
// forms are parsed without kong (see fastParse), the rest by kong.
func parse(args []string, stdout io.Writer, exit func(int)) (*parsed, error) {
	var p parsed
	flagArgs, command, isRun := runner.SplitCommand(args)
	if msg := gate.EmptyConfig(flagArgs); msg != "" {
		return nil, usageError{msg}
	}
	if isRun {
		p.command = command
		if fastParse(flagArgs, &p.CLI) {
			p.run = p.CLI.Run.Run
			return &p, p.Run.check(p.command)
		}
		flagArgs = append([]string{"run"}, flagArgs...)
	}
	for _, a := range flagArgs {
		if !utf8.ValidString(a) {
			return nil, usageError{fmt.Sprintf("argument %q is not valid UTF-8", a)}
		}
	}
	k, err := newKong(&p.CLI, stdout, exit)
	if err != nil {
		return nil, err
	}
	ctx, err := k.Parse(flagArgs)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			msg := pe.Error()
			if !isRun && strings.Contains(msg, "unexpected argument") {
				msg += " (to run a command through a gate: cron-gate NAME -- COMMAND)"
			}
			return nil, usageError{msg}
		}
		return nil, err
	}
	p.run = func(e *env) error {
		e.kong = ctx
		return ctx.Run(e)
	}
	if sel := ctx.Selected(); sel != nil {
		if c, ok := sel.Target.Addr().Interface().(checker); ok {
			return &p, c.check(p.command)
		}
	}
	return &p, nil
}

// newKong is cron-gate's kong parser filling c.
func newKong(c *CLI, stdout io.Writer, exit func(int)) (*kong.Kong, error) {
	return kong.New(c,
		kong.Name("cron-gate"),
		kong.Description(description),
		kong.Vars(gate.Vars()),
		kong.Vars{"version": "cron-gate " + runner.BuildString()},
		kong.Writers(stdout, os.Stderr),
		kong.Exit(exit),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(helpWithRunFlags),
		kongduration.Option(),
	)
}

// Model is cron-gate's command line as kong parses it (every subcommand,
// flag and argument, with their help), for the man page and the shell
// completions generated from it (internal/clidoc): they cannot drift
// from what the parser accepts. It parses nothing.
func Model() (*kong.Kong, error) {
	return newKong(&CLI{}, io.Discard, func(int) {})
}

// check checks the command after "--" and the durations.
func (c *RunCmd) check(command []string) error {
	if msg := c.RunFlags.Check(command); msg != "" {
		return usageError{msg}
	}
	return nil
}

// check refuses a negative --for.
func (c *PauseCmd) check([]string) error {
	if c.For < 0 {
		return usageError{fmt.Sprintf("--for %v is negative", c.For)}
	}
	return nil
}

// fastParse is gate.FastParse into the kong CLI struct, so that a
// line parses to the same CLI either way (FuzzFastParse).
func fastParse(args []string, c *CLI) bool {
	l, ok := gate.FastParse(args)
	*c = CLI{GlobalFlags: l.GlobalFlags, Run: RunCmd{RunFlags: l.RunFlags}}
	return ok
}

// parseUntil reads --until: RFC 3339, or local "YYYY-MM-DD HH:MM[:SS]" or
// "YYYY-MM-DDTHH:MM[:SS]".
func parseUntil(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageError{fmt.Sprintf("--until %q is not a time (use RFC 3339 like 2026-12-01T09:00:00+09:00, or '2026-12-01 09:00' local)", s)}
}

// helpWithRunFlags is kong's help, and at the top level the flags of the
// run form too: the run is a hidden command (main puts "run" in front of
// a line with "--"), so kong alone would not list --timeout and
// --kill-after, which crontab lines use most.
func helpWithRunFlags(opts kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(opts, ctx); err != nil {
		return err
	}
	if ctx.Selected() != nil {
		return nil
	}
	for _, n := range ctx.Model.Children {
		if n.Name != "run" {
			continue
		}
		w := ctx.Stdout
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Run flags (cron-gate [flags] NAME -- COMMAND):")
		for _, f := range n.Flags {
			if f.Hidden || f.Name == "help" {
				continue
			}
			printFlag(w, f.String(), f.Help)
		}
	}
	return nil
}

// printFlag writes one flag as kong's help does: the flag, then its help
// in a column from 25, wrapped at 80.
func printFlag(w io.Writer, flag, help string) {
	const col, width = 25, 80
	line := "      " + flag
	if len(line) >= col-1 {
		fmt.Fprintln(w, line)
		line = ""
	}
	line += strings.Repeat(" ", col-len(line))
	for _, word := range strings.Fields(help) {
		if len(line)+1+len(word) > width && strings.TrimSpace(line) != "" && len(line) > col {
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			line = strings.Repeat(" ", col)
		}
		if len(line) > col {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}
