package tui

import (
	"bytes"
	"testing"
)

// Every message is one line with no control or bidirectional character in
// it, whatever the text it quotes (a path, a pause reason, a holder's
// command line).
func TestMessagesNeutralised(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{Prog: "cron-gate", W: &b}
	p.Skipf("skipped gate %s: %s", "y", "L1\nL2\x1b]0;pwned\x07\x1b[31mred \u202e5202 ,1 naJ\u0085\xff")
	p.Errorf("lock %s", "/tmp/a\rb\u2066")
	want := "cron-gate: skipped gate y: L1\\nL2\\x1b]0;pwned\\a\\x1b[31mred \\u202e5202 ,1 naJ\\u0085\\xff\n" +
		"cron-gate: lock /tmp/a\\rb\\u2066\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
