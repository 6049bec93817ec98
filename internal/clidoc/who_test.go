//go:build linux

package clidoc

import (
	"slices"
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

// whoFlags is what a completion offers for `withlock who --`: the long
// spellings of who's own flags (WhoModel), sorted, so that a flag added
// to who needs no edit here.
func whoFlags(t *testing.T) string {
	t.Helper()
	who, err := WhoModel()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range who.Flags {
		out = append(out, "--"+f.Long)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
