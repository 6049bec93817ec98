package journal

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentRotationsLoseNothing is what the gate's lock is for: many
// writers appending to one gate whose journal rotates every few records.
// Under the lock each Append reads the checkpoint, appends, and rotates or
// rewrites the checkpoint as one step, so the counts carried across
// rotations (runs, successes) are exact and every Append succeeds.
// Without it (the mutation check's journal-no-lock), two writers rotate
// on the same stale count and one record's count is lost, or the second
// rename finds no journal. TestConcurrentAppendsLoseNothing cannot see
// that: with a history of 1000 nothing rotates, and the journal's
// O_APPEND lines are whole without any lock.
func TestConcurrentRotationsLoseNothing(t *testing.T) {
	dir := t.TempDir()
	const writers, each, history = 8, 60, 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One Journal per writer, as one per cron-gate process.
			j, err := Open(dir, "g", history)
			if err != nil {
				t.Error(err)
				return
			}
			defer j.Close()
			for i := range each {
				rec := Record{Run: fmt.Sprintf("w%d-%d", w, i), Event: EventEnd, Time: time.Now(), Outcome: OutcomeSuccess, Exit: new(0)}
				if err := j.Append(rec); err != nil {
					t.Errorf("writer %d, append %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	j, err := Open(dir, "g", history)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	s, err := j.Summary()
	if err != nil {
		t.Fatal(err)
	}
	const n = writers * each
	if s.Runs != n || s.Successes != n {
		t.Fatalf("after %d successful appends from %d writers, with rotation every %d records: the summary counts %d runs and %d successes, want %d each (a rotation lost counts)",
			n, writers, history, s.Runs, s.Successes, n)
	}
	recs, errs := j.Records()
	if len(errs) > 0 {
		t.Fatalf("journal errors: %v", errs)
	}
	if len(recs) < history || len(recs) > 2*history {
		t.Fatalf("%d records kept; rotation keeps between %d and %d", len(recs), history, 2*history)
	}
}
