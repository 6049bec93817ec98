//go:build linux

// Package withlockkong parses withlock's command line with kong: help,
// error messages and every form of the line. withlock-full and
// withlock-etcd use it; the per-tick withlock binary does not link it
// (README, "Start-up cost").
package withlockkong

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

// Program names what is being parsed: the name and texts kong shows.
type Program struct {
	Name        string // "withlock"
	Description string
	Usage       string // first line of --help
}

// Parse parses args into o (whose CLI may be embedded in a larger struct:
// target is what kong fills, usually &o.CLI). It returns an error for every
// usage problem (exit 125); --help and --version print to stdout and exit
// 0 through exit. validate runs last, with whether a "--" was found.
func Parse(p Program, args []string, o *wc.Options, stdout io.Writer, exit func(int), validate func(found bool) error) error {
	flagArgs, command, found := wc.SplitCommand(args)
	// Kong turns bytes that are not UTF-8 into U+FFFD, which would lock
	// another path. The fast parser keeps bytes as they are and accepts
	// every well-formed line, so a line that reaches kong with such bytes
	// is malformed anyway; refuse it rather than guess.
	for _, a := range flagArgs {
		if !utf8.ValidString(a) {
			return wc.UsageError{Msg: fmt.Sprintf("argument %q is not valid UTF-8 and the command line is not one withlock can read without altering it; give such paths with --paths-from", a)}
		}
	}
	k, err := kong.New(&o.CLI,
		kong.Name(p.Name),
		kong.Description(p.Description),
		kong.Vars{"lockdir": wc.DefaultLockDir, "version": buildinfo.String()},
		kong.Writers(stdout, os.Stderr),
		kong.Exit(exit),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoAppSummary: true}),
		kong.Help(func(opts kong.HelpOptions, ctx *kong.Context) error {
			fmt.Fprintln(ctx.Stdout, p.Usage)
			return kong.DefaultHelpPrinter(opts, ctx)
		}),
	)
	if err != nil {
		return err
	}
	if _, err := k.Parse(flagArgs); err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			if !found && strings.Contains(pe.Error(), "unexpected argument") {
				return validate(false)
			}
			return wc.UsageError{Msg: pe.Error()}
		}
		return err
	}
	if o.Version {
		fmt.Fprintln(stdout, buildinfo.String())
		exit(0)
		return nil
	}
	o.Command = command
	return validate(found)
}
