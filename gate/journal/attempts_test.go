package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDigestAttempts: the digest keeps the last attempt (a paused skip is
// not one), the skips in a row since the last run that ran and when they
// began, a busy skip's locks, and the last RecentAttempts attempts, oldest
// first (issue 16, item 1: the facts the blocked state is judged from).
func TestDigestAttempts(t *testing.T) {
	j, err := Open(t.TempDir(), "g", 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	app := func(r Record) {
		t.Helper()
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() *Summary {
		t.Helper()
		s, err := j.Summary()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	app(Record{Run: "a", Event: EventEnd, Time: at(0), Outcome: OutcomeSuccess, Exit: new(0), DurationMS: 6000})
	app(Record{Run: "b", Event: EventSkip, Time: at(30), Outcome: OutcomeSkipped, Reason: ReasonLegacyLock, Detail: "held"})
	locks := []Lock{{Path: "/srv/a.md", File: "/tmp/l/x.lock"}, {Pool: "/tmp/s-{i}.lock", File: "/tmp/s-0.lock"}}
	app(Record{Run: "c", Event: EventEnd, Time: at(60), Outcome: OutcomeSkipped, Reason: ReasonBusy, Exit: new(75), Locks: locks, LocksMore: 3})
	s := sum()
	if s.ConsecutiveSkips != 2 || !s.SkippingSince.Equal(at(30)) {
		t.Fatalf("after two skips: %d in a row since %v", s.ConsecutiveSkips, s.SkippingSince)
	}
	if a := s.LastAttempt; a == nil || a.Reason != ReasonBusy || len(a.Locks) != 2 || a.Locks[1].Pool != "/tmp/s-{i}.lock" || a.LocksMore != 3 {
		t.Fatalf("last attempt: %+v", a)
	}
	if s.LastEnd == nil || s.LastEnd.Run != "a" {
		t.Fatalf("a busy skip became the last end: %+v", s.LastEnd)
	}
	// A paused skip is not a try: the run of skips ends, the last
	// attempt stays what it was.
	app(Record{Run: "d", Event: EventSkip, Time: at(90), Outcome: OutcomeSkipped, Reason: ReasonPaused})
	s = sum()
	if s.ConsecutiveSkips != 0 || !s.SkippingSince.IsZero() || s.LastAttempt.Run != "c" {
		t.Fatalf("after a paused skip: %d since %v, last attempt %s", s.ConsecutiveSkips, s.SkippingSince, s.LastAttempt.Run)
	}
	app(Record{Run: "e", Event: EventSkip, Time: at(120), Outcome: OutcomeSkipped, Reason: ReasonLegacyPidfile})
	if s = sum(); s.ConsecutiveSkips != 1 || !s.SkippingSince.Equal(at(120)) {
		t.Fatalf("a new run of skips: %d since %v", s.ConsecutiveSkips, s.SkippingSince)
	}
	// An error ends it too (the gate is in error then, not skipping).
	app(Record{Run: "f", Event: EventError, Time: at(150), Outcome: OutcomeError, Reason: ReasonConfig})
	if s = sum(); s.ConsecutiveSkips != 0 || s.LastAttempt.Run != "f" {
		t.Fatalf("after an error: %d, last attempt %s", s.ConsecutiveSkips, s.LastAttempt.Run)
	}
	// Recent holds the last 20, oldest first.
	for i := 0; i < 25; i++ {
		app(Record{Run: "r", Event: EventEnd, Time: at(200 + i), Outcome: OutcomeFailure, Exit: new(i), DurationMS: int64(i)})
	}
	s = sum()
	if len(s.Recent) != RecentAttempts || *s.Recent[0].Exit != 5 || *s.Recent[RecentAttempts-1].Exit != 24 || s.Recent[19].DurationMS != 24 {
		t.Fatalf("recent: %d, first %+v, last %+v", len(s.Recent), s.Recent[0], s.Recent[len(s.Recent)-1])
	}
	// Rebuilt from the journal, the digest is the same.
	os.Remove(filepath.Join(j.Dir, summaryFile))
	r := sum()
	a, _ := json.Marshal(s.Digest)
	b, _ := json.Marshal(r.Digest)
	if string(a) != string(b) {
		t.Fatalf("rebuilt digest differs:\n%s\n%s", a, b)
	}
}

// TestOldCheckpointRebuilt: a checkpoint written before the digest knew
// the attempts (no digest_v) is not trusted: it is rebuilt from the
// journal, so a gate blocked since before the upgrade is seen blocked.
func TestOldCheckpointRebuilt(t *testing.T) {
	j, err := Open(t.TempDir(), "g", 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	now := time.Now()
	for i := 0; i < 3; i++ {
		if err := j.Append(Record{Run: "s", Event: EventSkip, Time: now.Add(time.Duration(i) * time.Minute), Outcome: OutcomeSkipped, Reason: ReasonLegacyLock}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(j.Dir, summaryFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(data, &m)
	for _, k := range []string{"digest_v", "consecutive_skips", "skipping_since", "last_attempt", "recent"} {
		delete(m, k)
	}
	data, _ = json.Marshal(m)
	os.WriteFile(p, data, 0o644)
	s, err := j.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if s.ConsecutiveSkips != 3 || len(s.Recent) != 3 || s.LastAttempt == nil {
		t.Fatalf("an old checkpoint was trusted: %+v", s.Digest)
	}
}

// TestAttemptsJSON: the compact form round-trips, reasons with quotes or
// controls included (the slow path), and refuses other shapes.
func TestAttemptsJSON(t *testing.T) {
	t0 := time.Unix(1764580560, 0)
	as := Attempts{
		{Time: t0, Outcome: OutcomeSuccess, Exit: new(0), DurationMS: 6000},
		{Time: t0.Add(time.Minute), Outcome: OutcomeSkipped, Reason: ReasonBusy, Exit: new(75), DurationMS: 2},
		{Time: t0.Add(2 * time.Minute), Outcome: OutcomeSkipped, Reason: "odd \"r\"\n\u202e"},
	}
	data, err := json.Marshal(struct {
		R Attempts `json:"recent"`
	}{as})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"recent":[[1764580560,"success",0,6000,""],[1764580620,"skipped",75,2,"busy"],[1764580680,"skipped",null,0,"odd \"r\"\n` + "\u202e" + `"]]}`
	if string(data) != want {
		t.Fatalf("got  %s\nwant %s", data, want)
	}
	var back struct {
		R Attempts `json:"recent"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != want {
		t.Fatalf("round trip: %s", again)
	}
	for _, bad := range []string{`{"recent":[1]}`, `{"recent":[[1,"a",0,0]]}`, `{"recent":"x"}`, `{"recent":[["t","a",0,0,""]]}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzAttemptsJSON: UnmarshalJSON (summary.json may be edited by hand)
// never panics, and what it accepts encodes and decodes to the same.
func FuzzAttemptsJSON(f *testing.F) {
	f.Add([]byte(`[[1764580560123,"success",0,6000,""],[1,"skipped",null,2,"busy"]]`))
	f.Add([]byte(`[[1,"a\"b",-3,-4,"\u0000"]]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var as Attempts
		if as.UnmarshalJSON(data) != nil {
			return
		}
		enc, err := as.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Attempts
		if err := back.UnmarshalJSON(enc); err != nil {
			t.Fatalf("%s: re-decode of %s: %v", data, enc, err)
		}
		// Invalid UTF-8 becomes U+FFFD at the first encoding: from then
		// on the encoding is stable.
		enc2, _ := back.MarshalJSON()
		var third Attempts
		if err := third.UnmarshalJSON(enc2); err != nil {
			t.Fatalf("re-decode of %s: %v", enc2, err)
		}
		if enc3, _ := third.MarshalJSON(); string(enc2) != string(enc3) || len(third) != len(as) {
			t.Fatalf("not stable: %s vs %s", enc2, enc3)
		}
	})
}
