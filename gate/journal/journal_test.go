package journal

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/runner"
)

func TestJournalSummaryAndRotation(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, "g", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 25; i++ {
		rec := Record{Run: "r", Event: EventEnd, Time: t0.Add(time.Duration(i) * time.Minute), Outcome: OutcomeSuccess, Exit: new(0)}
		if i == 24 {
			rec.Outcome, rec.Exit = OutcomeFailure, new(3)
		}
		if err := j.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	s, err := j.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs != 25 || s.Successes != 24 || s.Failures != 1 || s.ConsecutiveFailures != 1 {
		t.Fatalf("summary counts: %+v", s)
	}
	if !s.LastSuccess.Time.Equal(t0.Add(23 * time.Minute)) {
		t.Fatalf("last success %v", s.LastSuccess.Time)
	}
	recs, errs := j.Records()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// History 10: rotation keeps between 10 and 20 records.
	if len(recs) < 10 || len(recs) > 20 {
		t.Fatalf("kept %d records, want 10..20", len(recs))
	}
	if recs[len(recs)-1].Outcome != OutcomeFailure {
		t.Fatalf("newest record is not last: %+v", recs[len(recs)-1])
	}
}

func TestJournalRebuildsLostSummary(t *testing.T) {
	dir := t.TempDir()
	j, _ := Open(dir, "g", 100)
	defer j.Close()
	now := time.Now()
	j.Append(Record{Run: "a", Event: EventEnd, Time: now, Outcome: OutcomeSuccess, Exit: new(0)})
	j.Append(Record{Run: "b", Event: EventSkip, Time: now, Outcome: OutcomeSkipped, Reason: ReasonPaused})
	// A crash after the journal append but with the summary gone or torn.
	os.WriteFile(filepath.Join(j.Dir, summaryFile), []byte(`{"v":1,"gate"`), 0o644)
	s, err := j.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSuccess == nil || s.LastSkip == nil || s.Skips[ReasonPaused] != 1 {
		t.Fatalf("rebuilt summary lost facts: %+v", s)
	}
}

func TestReadRecordsSkipsTornAndCorrupt(t *testing.T) {
	in := `{"v":1,"gate":"g","run":"a","event":"end","time":"2026-01-01T00:00:00Z","outcome":"success"}
garbage
{"v":2,"event":"end"}

{"v":1,"gate":"g","run":"b","event":"start","time":"2026-01-01T00:00:01Z"}
{"v":1,"gate":"g","run":"c","event":"end","ti`
	recs, errs := ReadRecords(strings.NewReader(in))
	if len(recs) != 2 || recs[0].Run != "a" || recs[1].Run != "b" {
		t.Fatalf("records: %+v", recs)
	}
	if len(errs) != 3 || !strings.Contains(errs[2].Error(), "torn") {
		t.Fatalf("errors: %v", errs)
	}
}

func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"v":1,"gate":"g","run":"a","event":"end","time":"2026-01-01T00:00:00Z","outcome":"success","exit":0}` + "\n"))
	f.Add([]byte("\n\n{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, errs := ReadRecords(bytes.NewReader(data))
		for _, r := range recs {
			if r.V != 1 || r.Event == "" {
				t.Fatalf("invalid record accepted: %+v", r)
			}
		}
		for _, e := range errs {
			if e == nil || strings.Contains(e.Error(), "\n") {
				t.Fatalf("bad error %q", e)
			}
		}
		// Folding anything that parses must not panic.
		s := &Summary{}
		for _, r := range recs {
			s.apply(r)
		}
	})
}

func TestConcurrentAppendsLoseNothing(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			j, err := Open(dir, "g", 1000)
			if err != nil {
				t.Error(err)
				return
			}
			defer j.Close()
			if err := j.Append(Record{Run: string(rune('a' + i%26)), Event: EventEnd, Time: time.Now(), Outcome: OutcomeSuccess, Exit: new(0)}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	j, _ := Open(dir, "g", 1000)
	s, _ := j.Summary()
	recs, _ := j.Records()
	if s.Runs != n || len(recs) != n || s.Records != n {
		t.Fatalf("runs %d, records %d, counted %d; want %d each", s.Runs, len(recs), s.Records, n)
	}
}

func TestVanishedRunIsAFailure(t *testing.T) {
	s := &Summary{}
	// A start record of a PID that is not alive (PID 4194304 never exists).
	s.apply(Record{Gate: "g", Run: "x", Event: EventStart, Time: time.Now(), Pid: 4194304})
	if len(s.Running) != 1 {
		t.Fatal("start not recorded as running")
	}
	s.ReapVanished(time.Now())
	if len(s.Running) != 0 || s.LastFailure == nil || s.LastFailure.Outcome != OutcomeVanished || s.ConsecutiveFailures != 1 {
		t.Fatalf("vanished run not judged a failure: %+v", s)
	}
	// A live process is not reaped. A child, not this process: under
	// qemu-user (the ARM tests, .ci/arm.sh) a process's own
	// /proc/PID/stat is the emulator's imitation, which does not parse.
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	pid := live.Process.Pid
	s.apply(Record{Gate: "g", Run: "y", Event: EventStart, Time: time.Now(), Pid: pid, PidStart: runner.StartTicks(pid)})
	s.ReapVanished(time.Now())
	if len(s.Running) != 1 {
		t.Fatal("a live run was reaped")
	}
}

// TestWaitingRun: a wait record makes the run waiting (with its until)
// until the run's next record, whatever it is (a start, or a skip once
// the period's claim is found taken); a waiter whose process is gone (a
// signal ended the wait) is dropped, and is no failure.
func TestWaitingRun(t *testing.T) {
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	pid := live.Process.Pid
	now := time.Now()
	s := &Summary{}
	for _, next := range []Record{
		{Gate: "g", Run: "a", Event: EventStart, Time: now, Pid: pid},
		{Gate: "g", Run: "b", Event: EventSkip, Time: now, Pid: pid, Outcome: OutcomeSkipped, Reason: ReasonDone},
	} {
		s.apply(Record{Gate: "g", Run: next.Run, Event: EventWait, Time: now, Until: now.Add(time.Minute), Pid: pid, PidStart: runner.StartTicks(pid)})
		s.ReapVanished(now)
		if w, ok := s.Waiting[next.Run]; !ok || !w.Until.Equal(now.Add(time.Minute)) || w.Pid != pid {
			t.Fatalf("wait record of run %s: Waiting %+v", next.Run, s.Waiting)
		}
		s.apply(next)
		if s.Waiting != nil {
			t.Fatalf("run %s's %s record did not end its wait: %+v", next.Run, next.Event, s.Waiting)
		}
	}
	s.apply(Record{Gate: "g", Run: "c", Event: EventWait, Time: now, Until: now.Add(time.Minute), Pid: 4194304})
	s.ReapVanished(now)
	if s.Waiting != nil || s.Failures != 0 {
		t.Fatalf("a waiter whose process is gone: Waiting %+v, %d failures", s.Waiting, s.Failures)
	}
}

func TestStaleCheckpointCatchesUp(t *testing.T) {
	dir := t.TempDir()
	j, _ := Open(dir, "g", 100)
	defer j.Close()
	now := time.Now()
	j.Append(Record{Run: "a", Event: EventEnd, Time: now, Outcome: OutcomeSuccess, Exit: new(0)})
	old, _ := os.ReadFile(filepath.Join(j.Dir, summaryFile))
	j.Append(Record{Run: "b", Event: EventEnd, Time: now.Add(time.Minute), Outcome: OutcomeFailure, Exit: new(1)})
	// The checkpoint's rename was lost in a crash: the old one is back.
	os.WriteFile(filepath.Join(j.Dir, summaryFile), old, 0o644)
	s, _ := j.Summary()
	if s.Runs != 2 || s.LastFailure == nil || s.LastFailure.Run != "b" {
		t.Fatalf("stale checkpoint not caught up: %+v", s)
	}
	// A record torn by a crash must not swallow the next one.
	f, _ := os.OpenFile(filepath.Join(j.Dir, journalFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"v":1,"gate":"g","run":"torn","ev`)
	f.Close()
	j.Append(Record{Run: "c", Event: EventEnd, Time: now.Add(2 * time.Minute), Outcome: OutcomeSuccess, Exit: new(0)})
	recs, errs := j.Records()
	if len(recs) != 3 || recs[2].Run != "c" || len(errs) != 1 {
		t.Fatalf("after a torn record: %d records, errors %v", len(recs), errs)
	}
	s, _ = j.Summary()
	if s.Runs != 3 || s.LastSuccess.Run != "c" {
		t.Fatalf("summary after torn record: %+v", s)
	}
}

// TestReadRecordsLongLine: a line over 8 MiB (corruption, or a file that
// is not a journal) is skipped without being held, and the records around
// it are kept.
func TestReadRecordsLongLine(t *testing.T) {
	rec := `{"v":1,"gate":"g","run":"a","event":"end","time":"2026-01-01T00:00:00Z","outcome":"success","exit":0}` + "\n"
	data := rec + strings.Repeat("x", maxRecordBytes+1) + "\n" + rec + strings.Repeat("y", maxRecordBytes+10)
	recs, errs := ReadRecords(strings.NewReader(data))
	if len(recs) != 2 {
		t.Errorf("records: %d, want the 2 around the long line", len(recs))
	}
	if len(errs) != 2 || errs[0].Error() != "line 2: longer than 8 MiB, not a journal record" ||
		errs[1].Error() != "line 4: longer than 8 MiB, not a journal record" {
		t.Errorf("errors: %v", errs)
	}
}

// The journal trusts its caller with the gate name's rules (gate.CheckName)
// but never reaches outside gates/: a name that is not one path component
// is refused, to write and to read.
func TestOpenRefusesPathNames(t *testing.T) {
	dir := t.TempDir()
	r, err := NewReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"", ".", "..", "../x", "a/b", "x\x00y"} {
		if j, err := Open(dir, name, 0); err == nil {
			j.Close()
			t.Errorf("Open(%q) succeeded", name)
		}
		if j, err := r.Journal(name); j != nil || err != nil {
			t.Errorf("Reader.Journal(%q) = %v, %v; want none", name, j, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a journal was made outside gates/")
	}
}
