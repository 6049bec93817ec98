//go:build linux

package clidoc

import (
	"strings"
	"testing"
)

// withlock(1) documents `withlock who` (issue 32, item 10: it was in no
// page): its synopsis, a section, and every flag and argument of its own
// command line (WhoModel), so that a flag added to who is in the next page.
func TestWithlockPageHasWho(t *testing.T) {
	page := generate(t)["man/man1/withlock.1"]
	who, err := WhoModel()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{bold("withlock") + " " + bold("who"), ".SH \"WITHLOCK WHO\""} {
		if !strings.Contains(page, want) {
			t.Errorf("withlock(1) lacks %q", want)
		}
	}
	sec := page[strings.Index(page, ".SH \"WITHLOCK WHO\""):]
	for _, f := range who.Flags {
		if !strings.Contains(sec, bold("--"+f.Long)) {
			t.Errorf("withlock(1), WITHLOCK WHO: --%s is missing", f.Long)
		}
	}
	for _, a := range who.Args {
		if !strings.Contains(sec, italic(a.Name)) {
			t.Errorf("withlock(1), WITHLOCK WHO: %s is missing", a.Name)
		}
	}
}
