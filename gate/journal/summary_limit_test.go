package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// summary.json is read within 16 MiB (docs/security.md): a checkpoint of
// exactly 16 MiB is used as it is, one byte more is not read and the
// summary is rebuilt from the journal. The checkpoint planted here says 5
// paused skips where the journal has 1, so the two are told apart.
func TestSummaryBounded(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, "g", 100)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.Append(Record{Run: "b", Event: EventSkip, Time: time.Now(), Outcome: OutcomeSkipped, Reason: ReasonPaused})
	s, err := j.Summary()
	if err != nil || s.Skips[ReasonPaused] != 1 {
		t.Fatalf("Summary = %+v, %v", s, err)
	}
	s.Skips[ReasonPaused] = 5
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size int
		want int64
	}{{16 << 20, 5}, {16<<20 + 1, 1}} {
		padded := append(append([]byte{}, b...), strings.Repeat(" ", c.size-len(b))...)
		if err := os.WriteFile(filepath.Join(j.Dir, summaryFile), padded, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := j.Summary()
		if err != nil || s.Skips[ReasonPaused] != c.want {
			t.Errorf("a summary.json of %d bytes: %d paused skips, %v; want %d", c.size, s.Skips[ReasonPaused], err, c.want)
		}
	}
}
