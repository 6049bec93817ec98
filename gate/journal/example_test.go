//go:build linux

package journal_test

import (
	"fmt"
	"os"
	"time"

	"github.com/crongate/crongate/gate/journal"
)

// Every run is one start and one end record; the summary beside the
// journal knows the last success without reading the history.
func ExampleJournal_Append() {
	stateDir, _ := os.MkdirTemp("", "journal-example-")
	defer os.RemoveAll(stateDir)
	j, err := journal.Open(stateDir, "backup", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()

	start := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	exit := 0
	j.Append(journal.Record{Run: "r1", Event: journal.EventStart, Time: start})
	j.Append(journal.Record{Run: "r1", Event: journal.EventEnd, Time: start.Add(time.Minute),
		Started: start, Outcome: journal.OutcomeSuccess, Exit: &exit})

	s, err := j.Summary()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Runs, s.Successes, s.LastSuccess.Time.Format(time.RFC3339))
	// Output: 1 1 2026-12-01T03:01:00Z
}
