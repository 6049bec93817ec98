package tests

import (
	"os"
	"regexp"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdWaitgrep implements
//
//	waitgrep FILE REGEX
//
// It polls until FILE exists and a line of it matches REGEX, and fails
// after waitDeadline. Scripts use it to know that a background process
// has said it reached a stage (cron-gate -v's jitter wait).
func cmdWaitgrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitgrep")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: waitgrep FILE REGEX")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	f := ts.MkAbs(args[0])
	if !poll(nil, func() bool { b, err := os.ReadFile(f); return err == nil && re.Match(b) }) {
		ts.Fatalf("waitgrep %s %q: no match after %v%s", args[0], args[1], waitDeadline, bgStatus(ts))
	}
}
