//go:build linux

package withlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/runner/kongduration"
	"github.com/crongate/crongate/internal/safetext"
)

// whoCLI is `withlock who`'s command line: withlock's own flags (CLI,
// their one definition), so that a crontab line can be pasted whole, and
// the paths as arguments. The flags that only shape a run (--wait,
// --timeout, --skip-code, ...) are checked as withlock checks them, then
// ignored, and hidden from who's help (whoShown).
type whoCLI struct {
	Args []string `arg:"" optional:"" name:"path" help:"Paths to look up."`
	JSON bool     `help:"Print the documented JSON."`
	CLI
}

// whoShown are the flags `withlock who --help` lists: what names the
// locks to look up, and where they live.
var whoShown = map[string]bool{"paths": true, "paths-from": true, "null": true, "lock-dir": true, "slots": true, "slot-file": true, "json": true,
	"backend": true, "endpoints": true, "key-root": true, "key-prefix": true, "ca-file": true, "cert-file": true, "key-file": true,
	"server-name": true, "etcd-user": true, "password-file": true, "help": true}

const whoDescription = `Say who holds the locks a withlock line would take: for each path its
canonical form (the Python rule), its lock file and its holders (pid,
command line, start time), or free; for each slot pool its slots; and an
earlier waiter (--wait) that withlock would yield to. Nothing is locked,
created or waited for.

Exit codes: 0 all free (withlock would run now); 75 something is held
(a path, or every slot of a pool) or an earlier waiter is queued for it;
125 withlock's own failure, or a holder that cannot be told.`

// WhoDescription is what `withlock who --help` and withlock(1) say of it.
const WhoDescription = whoDescription

// newWhoKong is kong set up for `withlock who`'s command line c.
func newWhoKong(p Program, c *whoCLI, stdout io.Writer, exit func(int)) (*kong.Kong, error) {
	k, err := kong.New(c, kong.Name(p.Name+" who"), kong.Description(whoDescription), kong.Vars(Vars()),
		kong.Writers(stdout, os.Stderr), kong.Exit(exit), kongduration.Option(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoAppSummary: true}),
		kong.Help(func(opts kong.HelpOptions, ctx *kong.Context) error {
			fmt.Fprintln(ctx.Stdout, "Usage: "+p.Name+" who [flags] [PATH...]")
			return kong.DefaultHelpPrinter(opts, ctx)
		}))
	if err != nil {
		return nil, err
	}
	for _, f := range k.Model.Flags {
		f.Hidden = f.Hidden || !whoShown[f.Name]
		if f.Name == "paths" {
			f.Help = "Paths to look up (comma-separated, repeatable), as withlock takes them."
		}
	}
	return k, nil
}

// Who is `withlock who PATH... [--paths-from FILE] [--slots N --slot-file
// T] [--json]` for d's backend; args follow "who". A pasted withlock line
// is taken as it is: its run-only flags are ignored, and what follows
// "--" is its command, not looked at.
func Who(p Program, d Driver, args []string, stdout io.Writer) int {
	// Long: parse, resolve and print for both output forms, as one subcommand's file.
	out := &safetext.Printer{Prog: p.Name}
	var c whoCLI
	args, command, found := runner.SplitCommand(args)
	err := func() error {
		for _, a := range args {
			if !utf8.ValidString(a) {
				return UsageError{Msg: fmt.Sprintf("argument %q is not valid UTF-8; give such paths with --paths-from", a)}
			}
		}
		k, err := newWhoKong(p, &c, stdout, os.Exit)
		if err != nil {
			return err
		}
		if _, err := k.Parse(args); err != nil {
			var pe *kong.ParseError
			if errors.As(err, &pe) {
				return UsageError{Msg: pe.Error()}
			}
			return err
		}
		return nil
	}()
	if err != nil {
		out.Errorf("who: %v", err)
		out.Hintf("see withlock who --help")
		return runner.ExitFailure
	}
	if c.FirstOf || c.CandidatesFrom != "" {
		out.Errorf("who: a --first-of line asks about many sets; withlock who answers for one")
		out.Hintf("ask about a candidate set with --paths or --paths-from, in the line's order")
		return runner.ExitFailure
	}
	if len(c.Args) == 0 && len(c.Paths) == 0 && c.PathsFrom == "" && len(c.Slots) == 0 {
		out.Errorf("who: nothing to look up: give paths, --paths-from or --slots")
		out.Hintf("see withlock who --help")
		return runner.ExitFailure
	}
	o := Options{CLI: c.CLI}
	// The checks of a withlock line, so that who refuses what withlock
	// would refuse; with a stand-in command when the line has none.
	o.Command = []string{"true"}
	if found {
		o.Command = command
	}
	o.Question = true
	if err := o.Validate(true); err != nil && !(len(c.Args) > 0 && strings.HasPrefix(err.Error(), "nothing to lock")) {
		out.Errorf("who: %v", err)
		out.Hintf("see withlock who --help")
		return runner.ExitFailure
	}
	o.Paths = append(c.Args, o.Paths...)
	if err := o.CheckBackend(d); err != nil {
		out.Errorf("who: %v", err)
		return runner.ExitFailure
	}
	req, err := o.Request()
	if err != nil {
		out.Errorf("who: %v", err)
		return runner.ExitFailure
	}
	conn, err := d.Open(&o)
	if err != nil {
		out.Errorf("who: %v", err)
		return runner.ExitFailure
	}
	defer conn.Close()
	insp, ok := conn.(lockset.Inspector)
	if !ok {
		out.Errorf("who: the %s backend cannot say who holds its locks; withlock who looks at local locks only", o.Backend)
		return runner.ExitFailure
	}
	in, err := insp.Inspect(req)
	if err != nil {
		out.Errorf("who: %v", err)
		if h := conn.Hint(err); h != "" {
			out.Hintf("%s", h)
		}
		return runner.ExitFailure
	}
	rep := NewWhoReport(o.Backend, o.LockDir, in, time.Now())
	if c.JSON {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			out.Errorf("who: %v", err)
			return runner.ExitFailure
		}
		stdout.Write(append(safetext.JSON(data), '\n'))
	} else {
		rep.Print(stdout)
	}
	switch {
	case rep.Busy:
		return runner.ExitSkip
	case rep.Unknown:
		out.Errorf("who: some holders cannot be told (see above); nothing is known to be held")
		return runner.ExitFailure
	}
	return 0
}
