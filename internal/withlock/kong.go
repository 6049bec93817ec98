//go:build linux

// withlock's command line as the binaries serve it: the fast parser
// (FastParse) for the common lines, kong for every other form (help,
// errors, `withlock who`), in one process. withlock (Main) and
// withlock-etcd (Serve) use it.

package withlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/runner/kongduration"
	"github.com/crongate/crongate/internal/safetext"
)

// Main is withlock's main: a command line whose backend another program
// serves goes to that program (withlock.Dispatch); withlock serves every
// other line itself (Serve).
func Main(args []string) int {
	// A line for another backend's program is exec'd before anything
	// else, signals included (withlock.Dispatch says why).
	if code, done := Dispatch(args); done {
		return code
	}
	return Serve(Withlock, Local, args)
}

// Serve is the main of a program that serves d's backend: withlock
// (withlock.Local, through Main) and withlock-etcd. It parses args
// (withlock.FastParse, else kong), checks them for d (Options.Check) and
// runs withlock.Run; a line that starts with "who" is `withlock who`
// (Who).
func Serve(p Program, d Driver, args []string) int {
	if len(args) > 0 && args[0] == "who" {
		// withlock who: a question, not a run (who.go).
		return Who(p, d, args[1:], os.Stdout)
	}
	// Signals first: until the command starts, one ends the program
	// with 128+N (runner.Notify).
	sigs := runner.Notify()
	var o Options
	var err error
	// The common, well-formed lines skip kong's reflective set-up (about
	// 0.4 ms a call: docs/design.md, "One withlock binary"); kong parses
	// the rest, with its help and messages.
	if flagArgs, command, found := runner.SplitCommand(args); FastParse(flagArgs, &o.CLI) {
		o.Command = command
		err = o.Check(found, d)
	} else {
		o = Options{}
		err = Parse(p, args, &o, os.Stdout, os.Exit, func(found bool) error { return o.Check(found, d) })
	}
	if err != nil {
		out := &safetext.Printer{Prog: p.Name}
		out.Errorf("%v", err)
		out.Hintf("%s", SeeHelp(d))
		return runner.ExitFailure
	}
	return Run(&o, sigs, d)
}

// Withlock is withlock's program: its name, texts and model.
var Withlock = Program{
	Name:        "withlock",
	Description: Description,
	Usage:       "Usage: withlock [flags] -- COMMAND [ARG...]",
}

// Program names what is being parsed: the name and texts kong shows.
type Program struct {
	Name        string // "withlock"; also the prefix of its messages
	Description string
	Usage       string // first line of --help
}

// Parse parses args into o (whose CLI may be embedded in a larger struct:
// target is what kong fills, usually &o.CLI). It returns an error for every
// usage problem (exit 125); --help and --version print to stdout and exit
// 0 through exit. validate runs last, with whether a "--" was found.
func Parse(p Program, args []string, o *Options, stdout io.Writer, exit func(int), validate func(found bool) error) error {
	flagArgs, command, found := runner.SplitCommand(args)
	// Kong turns bytes that are not UTF-8 into U+FFFD, which would lock
	// another path. The fast parser keeps bytes as they are and accepts
	// every well-formed line, so a line that reaches kong with such bytes
	// is malformed anyway; refuse it rather than guess.
	for _, a := range flagArgs {
		if !utf8.ValidString(a) {
			return UsageError{Msg: fmt.Sprintf("argument %q is not valid UTF-8 and the command line is not one withlock can read without altering it; give such paths with --paths-from", a)}
		}
	}
	k, err := newKong(p, &o.CLI, stdout, exit)
	if err != nil {
		return err
	}
	if _, err := k.Parse(flagArgs); err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			if !found && strings.Contains(pe.Error(), "unexpected argument") {
				return validate(false)
			}
			return UsageError{Msg: pe.Error()}
		}
		return err
	}
	if o.Version {
		fmt.Fprintln(stdout, p.Name, runner.BuildString())
		exit(0)
		return nil
	}
	o.Command = command
	return validate(found)
}

// newKong is p's kong parser filling c.
func newKong(p Program, c *CLI, stdout io.Writer, exit func(int)) (*kong.Kong, error) {
	return kong.New(c,
		kong.Name(p.Name),
		kong.Description(p.Description),
		kong.Vars(Vars()),
		kong.Writers(stdout, os.Stderr),
		kong.Exit(exit),
		kong.UsageOnError(),
		kongduration.Option(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoAppSummary: true}),
		kong.Help(func(opts kong.HelpOptions, ctx *kong.Context) error {
			fmt.Fprintln(ctx.Stdout, p.Usage)
			return kong.DefaultHelpPrinter(opts, ctx)
		}),
	)
}

// Model is p's command line as kong parses it (every flag, with its help),
// for the man page and the shell completions generated from it
// (internal/clidoc): they cannot drift from what the parser accepts. It
// parses nothing.
func Model(p Program) (*kong.Kong, error) {
	return newKong(p, &CLI{}, io.Discard, func(int) {})
}

// WhoModel is `withlock who`'s command line as kong parses it (Model's
// counterpart: the man page's section on it is generated from it).
func WhoModel(p Program) (*kong.Kong, error) {
	return newWhoKong(p, &whoCLI{}, io.Discard, func(int) {})
}
