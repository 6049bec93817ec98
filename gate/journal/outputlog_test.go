package journal

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// lastOutputWhole is LastOutput as it was: read the whole log, return
// from the last line beginning with the marker and holding " started ".
func lastOutputWhole(data []byte) string {
	start := -1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		line := data[off : off+end]
		if bytes.HasPrefix(line, []byte(runMarker)) && bytes.Contains(line, []byte(" started ")) {
			start = off
		}
		off += end + 1
	}
	if start < 0 {
		return ""
	}
	return string(data[start:])
}

func section(run, body string) string {
	return runMarker + run + " started 2026-11-29T09:10:00Z\n" + body + runMarker + run + " ended 2026-11-29T09:10:06Z: failure, exit 3\n"
}

func writeOutputLog(t testing.TB, stateDir, gate string, data []byte) string {
	t.Helper()
	p := filepath.Join(stateDir, "gates", gate, outputFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLastOutputSame: for logs shorter than LastOutputMax the answer is
// what reading the whole log gave, wherever the markers fall against the
// chunks the log is read in.
func TestLastOutputSame(t *testing.T) {
	dir := t.TempDir()
	pad := func(n int) string { return strings.Repeat("x", n-1) + "\n" }
	cases := map[string]string{
		"empty":           "",
		"no marker":       "hello\nworld\n",
		"one section":     section("r1", "out-1\nerr-1\n"),
		"two sections":    section("r1", "first\n") + section("r2", "second\n"),
		"ended only":      runMarker + "r1 ended 2026-11-29T09:10:06Z: success, exit 0\n",
		"marker mid-line": section("r1", "a\nx"+runMarker+"r9 started now\n"),
		"fake in output":  section("r1", runMarker+"fake started inside\nlast\n"),
		"no newline":      section("r1", "a\n") + runMarker + "r2 started 2026",
		"cut section":     section("r1", "a\n") + runMarker + "r2 started 2026\npartial",
		"long line":       section("r1", strings.Repeat("y", 3*outputChunk)+"\n"),
		"long marker line": section("r1", "a\n") + runMarker + strings.Repeat("z", 10000) + " started x\nb\n" +
			runMarker + strings.Repeat("z", 10000) + "\nc\n",
	}
	// The last header across the first chunk's boundary (the last
	// section about one chunk long) and the second's.
	for _, shift := range []int{-20, -19, -18, -17, -1, 0, 1, 2, 17, 18} {
		for _, chunks := range []int{1, 2} {
			head := runMarker + "r2 started 2026-11-29T09:10:00Z\n"
			cases[fmt.Sprintf("boundary %d %+d", chunks, shift)] = section("r1", pad(5000)) + head + pad(chunks*outputChunk+shift-len(head))
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 30; i++ {
		var b strings.Builder
		for b.Len() < rng.Intn(300_000) {
			var body strings.Builder
			for n := rng.Intn(40); n > 0; n-- {
				switch rng.Intn(6) {
				case 0:
					body.WriteString(runMarker + "noise started maybe\n")
				case 1:
					body.WriteString(runMarker + "noise\n")
				case 2:
					body.WriteString(strings.Repeat("=", rng.Intn(30)) + " cron-gate run\n")
				default:
					body.WriteString(strings.Repeat("o", rng.Intn(20_000)) + "\n")
				}
			}
			b.WriteString(section(fmt.Sprint("r", i), body.String()))
		}
		cases[fmt.Sprint("random ", i)] = b.String()
	}
	for name, log := range cases {
		writeOutputLog(t, dir, "g", []byte(log))
		got, err := LastOutputOf(dir, "g")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := lastOutputWhole([]byte(log)); got != want {
			t.Errorf("%s: LastOutputOf gives %d bytes %q..., reading the whole log %d bytes %q...", name, len(got), short(got), len(want), short(want))
		}
		tail, err := LastOutputTail(dir, "g", LastOutputMax)
		if err != nil || tail.Text != got || tail.Cut != 0 {
			t.Errorf("%s: LastOutputTail: cut %d, %v, same text %v", name, tail.Cut, err, tail.Text == got)
		}
	}
	if got, err := LastOutputOf(dir, "nope"); got != "" || err != nil {
		t.Errorf("no log: %q %v", got, err)
	}
}

func short(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestLastOutputBounded: a 256 MiB section (sparse: it costs no disk) is
// returned as its last bytes, marked as cut, without holding more than
// about the limit in memory; earlier sections are never read.
func TestLastOutputBounded(t *testing.T) {
	dir := t.TempDir()
	const big = 256 << 20
	p := writeOutputLog(t, dir, "g", []byte(section("r1", strings.Repeat("old output\n", 100_000))+runMarker+"r2 started 2026-11-29T09:10:00Z\n"))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := "Traceback (most recent call last):\nValueError: quota\n" + runMarker + "r2 ended 2026-11-29T10:10:06Z: failure, exit 3\n"
	if _, err := f.WriteAt([]byte("\n"+end), big); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(p)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tail, err := LastOutputTail(dir, "g", 64<<10)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("LastOutputTail(64 KiB) of a %d MiB log allocated %d KiB", st.Size()>>20, alloc>>10)
	}
	start := int64(len(section("r1", strings.Repeat("old output\n", 100_000))))
	if len(tail.Text) > 64<<10 || !strings.HasSuffix(tail.Text, end) || tail.Cut != st.Size()-start-int64(len(tail.Text)) ||
		tail.Header != runMarker+"r2 started 2026-11-29T09:10:00Z\n" {
		t.Errorf("tail: %d bytes, cut %d (section %d), header %q", len(tail.Text), tail.Cut, st.Size()-start, tail.Header)
	}

	runtime.GC()
	runtime.ReadMemStats(&before)
	text, err := LastOutputOf(dir, "g")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*LastOutputMax {
		t.Errorf("LastOutputOf of a %d MiB log allocated %d KiB", st.Size()>>20, alloc>>10)
	}
	head := runMarker + "r2 started 2026-11-29T09:10:00Z\n[... "
	if len(text) > LastOutputMax+200 || !strings.HasPrefix(text, head) || !strings.HasSuffix(text, end) || !strings.Contains(text, " bytes of this run's output not shown ...]\n") {
		t.Errorf("LastOutputOf: %d bytes: %q ... %q", len(text), short(text), text[max(0, len(text)-60):])
	}

	// Only the last section is read: a small one after a big log.
	p2 := writeOutputLog(t, dir, "h", []byte(strings.Repeat(section("r", strings.Repeat("line\n", 1000)), 2000)+section("last", "the end\n")))
	fh, err := os.Open(p2)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ = fh.Stat()
	cr := &countingReader{r: fh}
	tail, err = lastSection(cr, st.Size(), 64<<10)
	if err != nil || tail.Text != section("last", "the end\n") || tail.Cut != 0 {
		t.Fatalf("last section: %q cut %d %v", tail.Text, tail.Cut, err)
	}
	if n := cr.n.Load(); n > 2*outputChunk+int64(len(tail.Text))+4096 {
		t.Errorf("read %d bytes of a %d-byte log for a %d-byte section", n, st.Size(), len(tail.Text))
	}
}

// A bound past what a 32-bit int holds (log_max_bytes is an int64) must
// neither wrap nor panic where int is 32 bits (armhf): the log keeps what
// was written, and saves it. On 32-bit ARM, int(3<<30) was negative and
// the first write panicked with a slice out of range (tests/pkg's TestARM runs
// this under qemu-arm-static).
func TestOutputLogHugeBound(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, "g", 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, max := range []int64{3 << 30, 1 << 40, 1<<63 - 1} {
		l := NewOutputLog(max)
		if _, err := io.WriteString(l.Tee(io.Discard), "kept in full\n"); err != nil {
			t.Fatal(err)
		}
		l.End("")
		if err := l.Save(j, Record{Run: "r", Event: EventEnd}); err != nil {
			t.Fatalf("bound %d: %v", max, err)
		}
		got, err := LastOutputOf(dir, "g")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "\nkept in full\n") {
			t.Errorf("bound %d: the last output is %q, want the line written", max, got)
		}
	}
}
