// Package tui states the output rule of both binaries once: everything for
// humans goes to stderr, one line per message, prefixed with the program's
// name, lower case, no trailing period; a "hint:" line where the fix is not
// obvious. Stdout belongs to the command (and to status output). Every
// message is neutralised (safetext.Line): no control or bidirectional
// character in a path, a reason or a command line reaches the terminal.
package tui

import (
	"fmt"
	"io"
	"os"

	"github.com/crongate/crongate/internal/safetext"
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
	// One message, one line, and nothing in it that a terminal acts on: a
	// path, command line, pause reason or holder with a newline, an escape
	// sequence or a bidi override in it must not forge a second message,
	// recolour or reorder the line (safetext.Line escapes them).
	s := safetext.Line(fmt.Sprintf(format, args...))
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
