package safetext

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Every message is one line with no control or bidirectional character in
// it, whatever the text it quotes (a path, a pause reason, a holder's
// command line).
func TestMessagesNeutralised(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{Prog: "cron-gate", W: &b, ReportSkips: true}
	p.Skipf("skipped gate %s: %s", "y", "L1\nL2\x1b]0;pwned\x07\x1b[31mred \u202e5202 ,1 naJ\u0085\xff")
	p.Errorf("lock %s", "/tmp/a\rb\u2066")
	want := "cron-gate: skipped gate y: L1\\nL2\\x1b]0;pwned\\a\\x1b[31mred \\u202e5202 ,1 naJ\\u0085\\xff\n" +
		"cron-gate: lock /tmp/a\\rb\\u2066\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// openPTY opens a pseudo-terminal pair: the terminal side, and the side a
// terminal emulator reads.
func openPTY(t *testing.T) (tty, master *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, master
}

// TestSkipSaidOnlyToAPerson: a skip is one line on a terminal and nothing
// on a pipe or a file (cron's), unless -v or report_skips; -q silences it
// everywhere; errors and warnings are never silenced.
func TestSkipSaidOnlyToAPerson(t *testing.T) {
	tty, master := openPTY(t)
	(&Printer{Prog: "withlock", W: tty}).Skipf("skipped %s", "x")
	buf := make([]byte, 100)
	n, err := master.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "withlock: skipped x") {
		t.Fatalf("on a terminal: %q, %v", buf[:n], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		p    Printer
		want string
	}{
		{Printer{}, ""},
		{Printer{Verbose: true}, "withlock: skipped x\n"},
		{Printer{ReportSkips: true}, "withlock: skipped x\n"},
		{Printer{Quiet: true, Verbose: true}, ""},
	} {
		p := c.p
		p.Prog, p.W = "withlock", w
		p.Skipf("skipped %s", "x")
		p.Errorf("an error")
		p.Warnf("a warning")
		want := c.want + "withlock: an error\nwithlock: warning: a warning\n"
		got := make([]byte, len(want)+10)
		n, _ := r.Read(got)
		if string(got[:n]) != want {
			t.Errorf("%+v on a pipe: %q, want %q", c.p, got[:n], want)
		}
	}
	w.Close()
	var b bytes.Buffer
	(&Printer{Prog: "cron-gate", W: &b}).Skipf("skipped")
	if b.Len() != 0 {
		t.Errorf("to a buffer: %q", b.String())
	}
}

// A message line is bounded: a huge argument is cut in the middle, its
// start and end kept in whole characters, and the line says so.
func TestMessageBounded(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{Prog: "cron-gate", W: &b}
	huge := strings.Repeat("é", 60000)
	p.Errorf("--timeout %q: not a duration; hint at the end", huge)
	line := b.String()
	if strings.Count(line, "\n") != 1 || len(line) > MaxMessage || len(line) < MaxMessage-8 {
		t.Fatalf("a message of %d bytes in %d lines", len(line), strings.Count(line, "\n"))
	}
	if !strings.HasPrefix(line, "cron-gate: --timeout \"éé") || !strings.HasSuffix(line, "éé\": not a duration; hint at the end\n") ||
		!strings.Contains(line, " bytes left out]… ") || !utf8.ValidString(line) {
		t.Fatalf("cut wrong: %.80q … %.80q", line, line[len(line)-80:])
	}
	if got := Middle("short", 10); got != "short" {
		t.Fatalf("Middle cut a short line: %q", got)
	}
}
