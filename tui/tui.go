// Package tui states the output rule of both binaries once: everything for
// humans goes to stderr, one line per message, prefixed with the program's
// name, lower case, no trailing period; a "hint:" line where the fix is not
// obvious. Stdout belongs to the command (and to status output).
package tui

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Printer writes prefixed messages.
type Printer struct {
	Prog    string
	W       io.Writer // nil: os.Stderr
	Quiet   bool      // suppress Skipf and Infof
	Verbose bool      // show Infof
}

func (p *Printer) out() io.Writer {
	if p.W == nil {
		return os.Stderr
	}
	return p.W
}

func (p *Printer) line(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	// One message, one line: a path or command with a newline in it must not
	// forge a second message.
	s = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
	fmt.Fprintf(p.out(), "%s: %s\n", p.Prog, s)
}

// Errorf reports a failure. It is never silenced.
func (p *Printer) Errorf(format string, args ...any) { p.line(format, args...) }

// Hintf adds a hint line after an error.
func (p *Printer) Hintf(format string, args ...any) { p.line("hint: "+format, args...) }

// Skipf reports why the command did not run; -q silences it.
func (p *Printer) Skipf(format string, args ...any) {
	if !p.Quiet {
		p.line(format, args...)
	}
}

// Warnf reports something lost or degraded that did not stop the run; it is
// never silenced, because "nothing lost" means nothing lost silently.
func (p *Printer) Warnf(format string, args ...any) { p.line("warning: "+format, args...) }

// Donef says what a command typed by an operator (pause, resume, edit)
// did, in one line; -q silences it. Commands cron runs stay silent on
// success, but a pause that printed nothing could not be told from one
// that paused a typo.
func (p *Printer) Donef(format string, args ...any) {
	if !p.Quiet {
		p.line(format, args...)
	}
}

// Infof reports progress when -v is given.
func (p *Printer) Infof(format string, args ...any) {
	if p.Verbose && !p.Quiet {
		p.line(format, args...)
	}
}
