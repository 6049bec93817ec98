package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJournalFsync checks the journal's durability promise through the
// journalSync seam: end, skip and error records are fsynced before Append
// returns, the file fsynced is the journal and already holds the record,
// and an fsync that fails fails the Append.
func TestJournalFsync(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, "g", 100)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var synced []string // the journal's last line at each fsync
	var failSync error
	saved := journalSync
	t.Cleanup(func() { journalSync = saved })
	journalSync = func(f *os.File) error {
		// Through the descriptor, however the journal was opened.
		fdPath := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
		name, _ := os.Readlink(fdPath)
		if name != filepath.Join(dir, "gates", "g", "journal.jsonl") {
			t.Errorf("fsync of %s, want the journal", name)
		}
		data, err := os.ReadFile(fdPath)
		if err != nil {
			t.Errorf("fsync of %s: %v", name, err)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		synced = append(synced, lines[len(lines)-1])
		if failSync != nil {
			return failSync
		}
		return saved(f)
	}
	now := time.Now()
	for _, rec := range []Record{
		{Run: "e", Event: EventEnd, Time: now, Outcome: OutcomeSuccess, Exit: new(0)},
		{Run: "s", Event: EventSkip, Time: now, Outcome: OutcomeSkipped, Reason: ReasonPaused},
		{Run: "x", Event: EventError, Time: now, Outcome: OutcomeError, Detail: "bad config"},
	} {
		n := len(synced)
		if err := j.Append(rec); err != nil {
			t.Fatal(err)
		}
		if len(synced) != n+1 {
			t.Errorf("%s record: %d fsyncs, want 1", rec.Event, len(synced)-n)
			continue
		}
		if !strings.Contains(synced[n], `"run":"`+rec.Run+`"`) {
			t.Errorf("%s record: the journal's last line at fsync was %q, not the record", rec.Event, synced[n])
		}
	}
	failSync = errors.New("injected EIO")
	err = j.Append(Record{Run: "f", Event: EventEnd, Time: now, Outcome: OutcomeSuccess, Exit: new(0)})
	if err == nil || !strings.Contains(err.Error(), "fsync: injected EIO") {
		t.Errorf("Append with a failing fsync: %v, want the fsync error", err)
	}
}
