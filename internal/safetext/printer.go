//go:build linux

package safetext

// Printer states the output rule of both binaries once: everything for
// humans goes to stderr, one line per message, prefixed with the program's
// name, lower case, no trailing period; a "hint:" line where the fix is not
// obvious. Stdout belongs to the command (and to status output). Every
// message is neutralised (Line): no control or bidirectional
// character in a path, a reason or a command line reaches the terminal.

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Printer writes prefixed messages.
//
// A skip (Skipf: paused, busy, a legacy lock, the coordinator down) is
// said only to a person: when W is a terminal. Under cron, whose jobs'
// stderr is a pipe, it says nothing, so that cron mails nothing for a
// routine skip (the journal still records it); Verbose or ReportSkips
// (the config's report_skips) bring the line back there. Errors and
// warnings are never silenced.
type Printer struct {
	Prog        string
	W           io.Writer // nil: os.Stderr
	Quiet       bool      // suppress Skipf (also on a terminal), Donef and Infof
	Verbose     bool      // show Infof, and Skipf when W is not a terminal
	ReportSkips bool      // show Skipf when W is not a terminal
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
	// recolour or reorder the line (Line escapes them).
	s := Middle(Line(fmt.Sprintf(format, args...)), MaxMessage-len(p.Prog)-len(": \n"))
	fmt.Fprintf(p.out(), "%s: %s\n", p.Prog, s)
}

// MaxMessage bounds a message line's bytes (a 100 KB argument echoed in
// an error must not become a 100 KB mail): Middle keeps its start and its
// end, where what went wrong is said.
const MaxMessage = 2048

// Middle cuts a line s longer than max bytes in the middle, keeping whole
// characters of its start and end and saying how many bytes it left out.
func Middle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The marker's count has at most as many digits as len(s).
	marker := len(fmt.Sprintf(" …[%d bytes left out]… ", len(s)))
	keep := max(0, (limit-marker)/2)
	head, tail := keep, len(s)-keep
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s …[%d bytes left out]… %s", s[:head], tail-head, s[tail:])
}

// Errorf reports a failure. It is never silenced.
func (p *Printer) Errorf(format string, args ...any) { p.line(format, args...) }

// Hintf adds a hint line after an error.
func (p *Printer) Hintf(format string, args ...any) { p.line("hint: "+format, args...) }

// Skipf reports why the command did not run: on a terminal, or with
// Verbose or ReportSkips; never with Quiet (see Printer).
func (p *Printer) Skipf(format string, args ...any) {
	if p.SaysSkips() {
		p.line(format, args...)
	}
}

// SaysSkips reports whether Skipf writes anything, for a caller whose
// message costs something to build (withlock looks the holders up).
func (p *Printer) SaysSkips() bool {
	return !p.Quiet && (p.Verbose || p.ReportSkips || isTerminal(p.out()))
}

// IsTerminal reports whether w is a file open on a terminal (TCGETS
// answers, as isatty(3) asks): where file bytes must go through Line.
func IsTerminal(w io.Writer) bool { return isTerminal(w) }

// isTerminal is IsTerminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
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
