//go:build linux

package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tailJournal writes old (journal.1.jsonl) and cur (journal.jsonl) into a
// gate's directory and opens it to read.
func tailJournal(t *testing.T, old, cur []byte) *Journal {
	t.Helper()
	dir := t.TempDir()
	gd := filepath.Join(dir, "gates", "g")
	if err := os.MkdirAll(gd, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{journalOldFile: old, journalFile: cur} {
		if data != nil {
			if err := os.WriteFile(filepath.Join(gd, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	j, err := readAt(dir, "g")
	if err != nil || j == nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func tailLine(run string) []byte {
	b, _ := json.Marshal(Record{V: 1, Gate: "g", Run: run, Event: EventSkip, Time: time.Unix(0, 0).UTC()})
	return append(b, '\n')
}

// Tail reads the rotated file before the current one while bytes are
// left, drops the line the bound cuts and a torn last line, and says
// when older records were left.
func TestTail(t *testing.T) {
	old := append(tailLine("o1"), tailLine("o2")...)
	cur := append(append(tailLine("c1"), tailLine("c2")...), []byte(`{"v":1,"gate":"g","run":"torn"`)...)
	j := tailJournal(t, old, cur)
	runs := func(rs []Record) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Run)
		}
		return strings.Join(s, " ")
	}
	recs, cut, read, errs := j.Tail(1 << 20)
	if runs(recs) != "o1 o2 c1 c2" || cut || len(errs) != 0 || read != int64(len(old)+len(cur)) {
		t.Errorf("whole: %q cut %v, %d bytes read, %v", runs(recs), cut, read, errs)
	}
	// Enough for the current file and one old line and a half: the cut
	// old line is no record.
	n := int64(len(cur) + len(tailLine("o2")) + 10)
	if recs, cut, _, _ = j.Tail(n); runs(recs) != "o2 c1 c2" || !cut {
		t.Errorf("bound %d: %q cut %v", n, runs(recs), cut)
	}
	if recs, cut, _, _ = j.Tail(int64(len(cur))); runs(recs) != "c1 c2" || !cut {
		t.Errorf("the current file only: %q cut %v", runs(recs), cut)
	}
}

// Whatever the bytes and the bound, Tail never panics and returns only
// records that ReadRecords finds in the whole file, in order; with a
// bound past the file, exactly those.
func FuzzTail(f *testing.F) {
	f.Add(append(tailLine("a"), tailLine("b")...), int64(40))
	f.Add([]byte("\n\n{\n"), int64(2))
	f.Add(tailLine("x"), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		j := tailJournal(t, nil, data)
		recs, cut, read, _ := j.Tail(limit)
		if read > limit {
			t.Fatalf("read %d bytes, bound %d", read, limit)
		}
		all, _ := ReadRecords(bytes.NewReader(data))
		key := func(r Record) string { b, _ := json.Marshal(r); return string(b) }
		i := 0
		for _, r := range recs {
			for i < len(all) && key(all[i]) != key(r) {
				i++
			}
			if i == len(all) {
				t.Fatalf("record %+v is not one of the file's, in order", r)
			}
			i++
		}
		if limit >= int64(len(data)) && (cut || len(recs) != len(all)) {
			t.Fatalf("bound %d past %d bytes: %d of %d records, cut %v", limit, len(data), len(recs), len(all), cut)
		}
	})
}
