package journal

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/runner"
)

// A cut drain: the section keeps what was written before close, then the
// cut note, then the end marker; what is written after close passes
// through but is not kept.
func TestOutputLogCut(t *testing.T) {
	j, err := Open(t.TempDir(), "g", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	l := NewOutputLog(0)
	var passed strings.Builder
	w := l.Tee(&passed)
	io.WriteString(w, "before\n")
	l.End(CutNote(runner.DefaultDrain))
	io.WriteString(w, "late\n")
	code := 0
	start := time.Date(2026, 11, 29, 9, 10, 0, 0, time.UTC)
	if err := l.Save(j, Record{Run: "r1", Started: start, Time: start.Add(time.Second), Outcome: OutcomeSuccess, Exit: &code}); err != nil {
		t.Fatal(err)
	}
	got, err := j.LastOutput()
	if err != nil {
		t.Fatal(err)
	}
	want := runMarker + "r1 started 2026-11-29T09:10:00Z\nbefore\n" + CutNote(runner.DefaultDrain) + "\n" +
		runMarker + "r1 ended 2026-11-29T09:10:01Z: success, exit 0\n"
	if got != want {
		t.Errorf("section:\n%s\nwant:\n%s", got, want)
	}
	if passed.String() != "before\nlate\n" {
		t.Errorf("passed through %q; want both writes", passed.String())
	}
	if strings.HasPrefix(CutNote(time.Second), runMarker) || !strings.HasPrefix(CutNote(time.Second), "[... output cut 1s after the command ended") {
		t.Errorf("cut note %q must not look like a marker and must say the output was cut", CutNote(time.Second))
	}
}

// Closed without a note (the drain completed): nothing is added.
func TestOutputLogClosedNoNote(t *testing.T) {
	j, err := Open(t.TempDir(), "g", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	l := NewOutputLog(0)
	io.WriteString(l.Tee(io.Discard), "all\n")
	l.End("")
	code := 3
	start := time.Date(2026, 11, 29, 9, 10, 0, 0, time.UTC)
	if err := l.Save(j, Record{Run: "r1", Started: start, Time: start, Outcome: OutcomeFailure, Exit: &code}); err != nil {
		t.Fatal(err)
	}
	got, _ := j.LastOutput()
	if strings.Contains(got, "output cut") || !strings.Contains(got, "\nall\n") {
		t.Errorf("section %q: want the output and no cut note", got)
	}
}
