package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/buildinfo"
)

// DefaultLockDir is the lock dir of the user's Python workers
// (scripts/lib/blog_file_lock.py), so that both take the same locks.
const DefaultLockDir = "/tmp/blog-file-locks"

// CLI is withlock's command line. The first "--" ends withlock's flags;
// everything after it is the command, untouched.
type CLI struct {
	Paths     []string         `short:"p" sep:"none" placeholder:"PATH,..." help:"Paths to lock (comma-separated, repeatable)."`
	PathsFrom string           `placeholder:"FILE" help:"Read paths from FILE, one per line ('-' for stdin)."`
	Null      bool             `short:"0" help:"--paths-from is NUL-separated (for names with newlines)."`
	LockDir   string           `env:"WITHLOCK_LOCK_DIR" placeholder:"DIR" default:"${lockdir}" help:"Directory of the per-path lock files (default ${lockdir})."`
	Slots     []int            `sep:"none" placeholder:"N" help:"Take one of N slots of a pool (repeatable: one pool per --slots)."`
	SlotFile  []string         `sep:"none" placeholder:"TEMPLATE" help:"Slot file template with {i}, paired with the --slots of the same position (default LOCKDIR/withlock-slot-{i}.lock)."`
	Wait      time.Duration    `placeholder:"DURATION" help:"Retry the whole set until DURATION has passed before skipping."`
	SkipCode  int              `default:"75" placeholder:"N" help:"Exit code when something is busy (default 75, EX_TEMPFAIL)."`
	Timeout   time.Duration    `placeholder:"DURATION" help:"Stop the command (TERM, then KILL) if it runs longer; exit 124."`
	KillAfter time.Duration    `default:"10s" placeholder:"DURATION" help:"Grace between TERM and KILL on --timeout."`
	Verbose   bool             `short:"v" help:"Say what was taken."`
	Quiet     bool             `short:"q" help:"Do not say why the command was skipped."`
	Version   kong.VersionFlag `help:"Print the version and exit."`
}

// options is the parsed command line plus the command.
type options struct {
	CLI
	Command []string
}

const description = `Run COMMAND while holding per-path flock locks and concurrency slots, all or
nothing. Lock files are the Python workers' own (sha256 of the resolved path
+ ".lock" in the lock dir), so old and new processes exclude each other.

Exit codes: the command's own; 75 (--skip-code) skipped because busy;
124 timed out; 125 withlock's own failure; 126 not executable; 127 not
found; 128+N the command died of signal N.`

// splitCommand splits args at the first "--": withlock's flags before it,
// the command after. Kong's passthrough would keep the "--" in the command
// and swallow unknown flags as the command, so the split is done here.
func splitCommand(args []string) (flags, command []string, found bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// parse parses the command line. It returns an error for every usage
// problem (exit 125); --help and --version print to stdout and exit 0
// through exit.
func parse(args []string, stdout io.Writer, exit func(int)) (*options, error) {
	flagArgs, command, found := splitCommand(args)
	var o options
	if fastParse(flagArgs, &o.CLI) {
		o.Command = command
		return &o, o.validate(found)
	}
	// Kong turns bytes that are not UTF-8 into U+FFFD, which would lock
	// another path. The fast parser keeps bytes as they are and accepts
	// every well-formed line, so a line that reaches kong with such bytes
	// is malformed anyway; refuse it rather than guess.
	for _, a := range flagArgs {
		if !utf8.ValidString(a) {
			return nil, usageError{fmt.Sprintf("argument %q is not valid UTF-8 and the command line is not one withlock can read without altering it; check its flags", a)}
		}
	}
	p, err := kong.New(&o.CLI,
		kong.Name("withlock"),
		kong.Description(description),
		kong.Vars{"lockdir": DefaultLockDir, "version": buildinfo.String()},
		kong.Writers(stdout, os.Stderr),
		kong.Exit(exit),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoAppSummary: true}),
		kong.Help(func(opts kong.HelpOptions, ctx *kong.Context) error {
			fmt.Fprintln(ctx.Stdout, "Usage: withlock [flags] -- COMMAND [ARG...]")
			return kong.DefaultHelpPrinter(opts, ctx)
		}),
	)
	if err != nil {
		return nil, err
	}
	if _, err := p.Parse(flagArgs); err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			if !found && strings.Contains(pe.Error(), "unexpected argument") {
				return nil, o.validate(false)
			}
			return nil, usageError{pe.Error()}
		}
		return nil, err
	}
	o.Command = command
	return &o, o.validate(found)
}

// usageError marks a problem with the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (o *options) validate(found bool) error {
	switch {
	case !found:
		return usageError{"no command: put it after --, as in: withlock --paths a,b -- COMMAND"}
	case len(o.Command) == 0 || o.Command[0] == "":
		return usageError{"empty command after --"}
	case o.Wait < 0:
		return usageError{fmt.Sprintf("--wait %v is negative", o.Wait)}
	case o.Timeout < 0:
		return usageError{fmt.Sprintf("--timeout %v is negative", o.Timeout)}
	case o.KillAfter < 0:
		return usageError{fmt.Sprintf("--kill-after %v is negative", o.KillAfter)}
	case o.SkipCode < 0 || o.SkipCode > 255:
		return usageError{fmt.Sprintf("--skip-code %d is outside 0..255", o.SkipCode)}
	case len(o.SlotFile) > len(o.Slots):
		return usageError{"--slot-file without a matching --slots N"}
	case len(o.Slots) > 1 && len(o.SlotFile) != len(o.Slots):
		return usageError{"several --slots need one --slot-file each, in the same order"}
	case len(o.Paths) == 0 && o.PathsFrom == "" && len(o.Slots) == 0:
		return usageError{"nothing to lock: give --paths, --paths-from or --slots"}
	case o.LockDir == "":
		return usageError{"--lock-dir is empty"}
	}
	for _, n := range o.Slots {
		if n <= 0 {
			return usageError{fmt.Sprintf("--slots %d: a pool needs at least 1 slot", n)}
		}
	}
	// --paths values are split here, not by kong, so that the fast parser
	// and kong split alike (kong would also unescape "\,").
	var paths []string
	for _, v := range o.Paths {
		for _, p := range strings.Split(v, ",") {
			if p == "" {
				return usageError{fmt.Sprintf("--paths %q has an empty entry (stray comma?)", v)}
			}
			paths = append(paths, p)
		}
	}
	o.Paths = paths
	return nil
}

// quoteArgs renders a command for messages.
func quoteArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
