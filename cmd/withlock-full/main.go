//go:build linux

// Command withlock-full is withlock with kong's full command-line parser:
// help, error messages and every form of the command line. withlock hands
// it any line its fast parser declines; it can also be run directly.
package main

import (
	"os"

	"github.com/crongate/crongate/internal/withlockcmd"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

func main() {
	sigs := runner.Notify()
	o, err := parse(os.Args[1:], os.Stdout, os.Exit)
	if err != nil {
		out := &tui.Printer{Prog: "withlock"}
		out.Errorf("%v", err)
		out.Hintf("see withlock --help")
		os.Exit(runner.ExitFailure)
	}
	os.Exit(withlockcmd.Run(o, sigs))
}
