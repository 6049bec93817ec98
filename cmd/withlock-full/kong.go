package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/buildinfo"
	wc "github.com/crongate/crongate/internal/withlockcmd"
)

// parse parses the command line. It returns an error for every usage
// problem (exit 125); --help and --version print to stdout and exit 0
// through exit.
func parse(args []string, stdout io.Writer, exit func(int)) (*wc.Options, error) {
	flagArgs, command, found := wc.SplitCommand(args)
	var o wc.Options
	// Kong turns bytes that are not UTF-8 into U+FFFD, which would lock
	// another path. The fast parser keeps bytes as they are and accepts
	// every well-formed line, so a line that reaches kong with such bytes
	// is malformed anyway; refuse it rather than guess.
	for _, a := range flagArgs {
		if !utf8.ValidString(a) {
			return nil, wc.UsageError{Msg: fmt.Sprintf("argument %q is not valid UTF-8 and the command line is not one withlock can read without altering it; check its flags", a)}
		}
	}
	p, err := kong.New(&o.CLI,
		kong.Name("withlock"),
		kong.Description(wc.Description),
		kong.Vars{"lockdir": wc.DefaultLockDir, "version": buildinfo.String()},
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
				return nil, o.Validate(false)
			}
			return nil, wc.UsageError{Msg: pe.Error()}
		}
		return nil, err
	}
	if o.Version {
		fmt.Fprintln(stdout, buildinfo.String())
		exit(0)
		return &o, nil
	}
	o.Command = command
	return &o, o.Validate(found)
}
