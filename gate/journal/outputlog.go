//go:build linux

package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/internal/statefile"
)

// DefaultLogMaxBytes bounds a gate's output log when log_output is on.
const DefaultLogMaxBytes = 1 << 20

const (
	outputFile    = "output.log"
	outputOldFile = "output.1.log"
	runMarker     = "=== cron-gate run "
)

// OutputLog keeps the command's stdout and stderr, interleaved in the order
// they were written (one writer, one lock), while passing both through.
// It holds at most max bytes of the run's output in memory, keeping the
// last part (errors come last), and appends the run as one section to
// output.log at the end, under the gate's lock, so concurrent runs never
// interleave. If cron-gate is killed the run's output is not kept.
//
// The run ends when the command does, not when its output pipes close: a
// process the command left behind may hold them for ever. The runner
// reads them for at most runner.DefaultDrain after the command's end
// (Spec.Drain); if they are still open then, the section gets a line
// saying so (CutNote) and nothing written later is kept.
type OutputLog struct {
	mu     sync.Mutex
	max    int
	buf    []byte
	lost   int64
	closed bool   // the section is final: later writes pass through only
	cut    string // the note for a cut drain, or ""
}

// MaxLogMaxBytes is the largest bound an output log takes (log_max_bytes
// accepts no more): the output is held in memory until the run ends, and
// twice the bound (the file's rotation size) must fit a 32-bit int.
const MaxLogMaxBytes = 1 << 30

// NewOutputLog returns an output log that keeps at most max bytes of a
// run's output (0 or less: DefaultLogMaxBytes; more than MaxLogMaxBytes:
// MaxLogMaxBytes).
func NewOutputLog(max int64) *OutputLog {
	if max <= 0 {
		max = DefaultLogMaxBytes
	}
	// max is an int64 and int may have 32 bits (armhf): bound it before
	// converting, or a large value wraps negative.
	if max > MaxLogMaxBytes {
		max = MaxLogMaxBytes
	}
	return &OutputLog{max: int(max)}
}

type teeWriter struct {
	l   *OutputLog
	dst io.Writer
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.l.mu.Lock()
	if !t.l.closed {
		t.l.buf = append(t.l.buf, p...)
		if over := len(t.l.buf) - t.l.max; over > 0 {
			t.l.lost += int64(over)
			t.l.buf = append(t.l.buf[:0], t.l.buf[over:]...)
		}
	}
	t.l.mu.Unlock()
	return t.dst.Write(p)
}

// Tee returns a writer that passes everything to dst and keeps it in the
// log until End. Writes through every Tee of one log are kept in order.
func (l *OutputLog) Tee(dst io.Writer) io.Writer { return teeWriter{l: l, dst: dst} }

// CutNote is the line a section gets when the output was cut: drain after
// the command ended, its stdout or stderr was still open (a process it
// started holds it) or not passed on yet (cron-gate's own stdout or stderr
// not taking more).
func CutNote(drain time.Duration) string {
	return fmt.Sprintf("[... output cut %v after the command ended: a process it started still holds its stdout or stderr, or cron-gate's own output is not being read; nothing later is kept ...]", drain)
}

// End makes the section final: what is written from now on passes
// through but is not kept. note, if not empty, is a line that says why
// the output ends there (CutNote).
func (l *OutputLog) End(note string) {
	l.mu.Lock()
	l.closed, l.cut = true, note
	l.mu.Unlock()
}

// Save appends the run's section to the gate's output log in j's
// directory, under the gate's lock, rotating the log to output.1.log
// first when it would grow past twice the bound; end is the run's end
// record. The log is fsynced.
func (l *OutputLog) Save(j *Journal, end Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sec bytes.Buffer
	fmt.Fprintf(&sec, "%s%s started %s\n", runMarker, end.Run, end.Started.Format(time.RFC3339Nano))
	if l.lost > 0 {
		fmt.Fprintf(&sec, "[... %d earlier bytes not kept ...]\n", l.lost)
	}
	sec.Write(l.buf)
	if len(l.buf) > 0 && l.buf[len(l.buf)-1] != '\n' {
		sec.WriteByte('\n')
	}
	if l.cut != "" {
		sec.WriteString(l.cut)
		sec.WriteByte('\n')
	}
	exit := "?"
	if end.Exit != nil {
		exit = fmt.Sprint(*end.Exit)
	}
	fmt.Fprintf(&sec, "%s%s ended %s: %s, exit %s\n", runMarker, end.Run, end.Time.Format(time.RFC3339Nano), end.Outcome, exit)
	return statefileLocked(j, func() error {
		f, err := j.openOutputAppend(int64(sec.Len()), 2*int64(l.max))
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write(sec.Bytes()); err != nil {
			return err
		}
		return f.Sync()
	})
}

func statefileLocked(j *Journal, fn func() error) error {
	return statefile.Locked(context.Background(), j.dir, gateLockFile, 0, fn)
}

// LastOutputMax bounds what LastOutput and LastOutputOf return of a run's
// section: twice DefaultLogMaxBytes, so that with the default log_max_bytes
// a whole section (at most that much output, plus its two marker lines)
// always fits.
const LastOutputMax = 2 * DefaultLogMaxBytes

// outputChunk is the size of the reads that look for the last section's
// first line from the end of the log.
const outputChunk = 64 << 10

// LastOutput returns the last run section of the gate's output log (from
// the last "started" marker line to the end), or "" if there is none.
// When the section is longer than LastOutputMax it returns the section's
// first line, a line "[... N bytes of this run's output not shown ...]"
// and the section's last LastOutputMax bytes. Memory is bounded whatever
// the log's size: the log is read from its end, in chunks.
func (j *Journal) LastOutput() (string, error) {
	f, err := j.dir.OpenFile(outputFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	t, err := lastSection(f, st.Size(), LastOutputMax)
	if err != nil || t.Cut == 0 {
		return t.Text, err
	}
	var b strings.Builder
	b.Grow(len(t.Header) + 80 + len(t.Text))
	b.WriteString(t.Header)
	if !strings.HasSuffix(t.Header, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[... %d bytes of this run's output not shown ...]\n", t.Cut-int64(len(t.Header)))
	b.WriteString(t.Text)
	return b.String(), nil
}

// LastOutputOf returns the last run's output kept for gate under stateDir
// (Journal.LastOutput).
func LastOutputOf(stateDir, gate string) (string, error) {
	j, err := readAt(stateDir, gate)
	if j == nil || err != nil {
		return "", err
	}
	defer j.Close()
	return j.LastOutput()
}

// OutputTail is the end of the last run section of a gate's output log.
type OutputTail struct {
	// Text is the section's last bytes: all of it when Cut is 0 (its
	// "started" line first), else at most the limit asked for, from the
	// start of a line when one begins in its first KiB.
	Text string
	// Cut is how many bytes of the section come before Text.
	Cut int64
	// Header is the section's first line ("=== cron-gate run ID started
	// TIME\n"), at most 1 KiB of it.
	Header string
}

// LastOutputTail returns the end of the last run section of the gate's
// output log under stateDir: at most limit bytes of it, and how many bytes
// were left out before them. It reads the log from its end, in chunks,
// only back to the section's first line, and never holds more than about
// limit plus 64 KiB: the log can be twice log_max_bytes long. No log or
// no section: an empty tail and no error.
func LastOutputTail(stateDir, gate string, limit int) (OutputTail, error) {
	f, err := openOutputLog(stateDir, gate)
	if errors.Is(err, fs.ErrNotExist) {
		return OutputTail{}, nil
	}
	if err != nil {
		return OutputTail{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return OutputTail{}, err
	}
	return lastSection(f, st.Size(), limit)
}

// lastSection finds the last section of an output log of size bytes read
// through r — the last line that begins with the run marker and holds
// " started " (sections are appended whole, so it begins the last run's)
// — and returns at most limit bytes of its end.
func lastSection(r io.ReaderAt, size int64, limit int) (OutputTail, error) {
	if limit <= 0 {
		limit = 1
	}
	start, err := lastStart(r, size)
	if err != nil || start < 0 {
		return OutputTail{}, err
	}
	header, err := readLine(r, start, size, 1024)
	if err != nil {
		return OutputTail{}, err
	}
	from := start
	if size-start > int64(limit) {
		from = size - int64(limit)
	}
	buf := make([]byte, size-from)
	if n, err := r.ReadAt(buf, from); n < len(buf) {
		return OutputTail{}, fmt.Errorf("%s: read %d of %d bytes: %w", outputFile, n, len(buf), err)
	}
	if from > start {
		// Begin at a line when one begins soon enough.
		if i := bytes.IndexByte(buf[:min(len(buf), 1024)], '\n'); i >= 0 && i+1 < len(buf) {
			buf = buf[i+1:]
		}
	}
	return OutputTail{Text: string(buf), Cut: size - int64(len(buf)) - start, Header: string(header)}, nil
}

// lastStart returns the offset of the last section's "started" line, or
// -1, reading backwards from the end of the log in chunks.
func lastStart(r io.ReaderAt, size int64) (int64, error) {
	marker := []byte(runMarker)
	buf := make([]byte, outputChunk+len(marker))
	// Candidates are line starts followed by the marker; the chunks
	// overlap by the marker's length so none is missed at a boundary.
	for end := size; end > 0; {
		from := max(0, end-outputChunk)
		n := int(min(end+int64(len(marker)), size) - from)
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, from); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		// Each search finds the last occurrence beginning before hi.
		for hi := int(end - from); hi > 0; {
			i := bytes.LastIndex(chunk[:min(hi+len(marker)-1, len(chunk))], marker)
			if i < 0 {
				break
			}
			hi = i
			off := from + int64(i)
			if off > 0 && (i == 0 && !lineStartAt(r, off) || i > 0 && chunk[i-1] != '\n') {
				continue
			}
			ok, err := lineHasStarted(r, off, size)
			if err != nil {
				return -1, err
			}
			if ok {
				return off, nil
			}
		}
		end = from
	}
	return -1, nil
}

// lineStartAt reports whether the byte before off is a newline.
func lineStartAt(r io.ReaderAt, off int64) bool {
	var b [1]byte
	_, err := r.ReadAt(b[:], off-1)
	return err == nil && b[0] == '\n'
}

// lineHasStarted reports whether the line at off holds " started ",
// reading it in chunks (an output line can be long).
func lineHasStarted(r io.ReaderAt, off, size int64) (bool, error) {
	word := []byte(" started ")
	buf := make([]byte, 4096)
	var carry []byte
	for off < size {
		n := int(min(int64(len(buf)), size-off))
		if _, err := r.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		b := buf[:n]
		nl := bytes.IndexByte(b, '\n')
		if nl >= 0 {
			b = b[:nl]
		}
		if bytes.Contains(append(carry, b...), word) {
			return true, nil
		}
		if nl >= 0 {
			return false, nil
		}
		carry = append(carry[:0], b[max(0, len(b)-len(word)+1):]...)
		off += int64(n)
	}
	return false, nil
}

// readLine returns the line at off, newline included, at most max bytes.
func readLine(r io.ReaderAt, off, size int64, max int) ([]byte, error) {
	b := make([]byte, min(int64(max), size-off))
	if _, err := r.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	}
	return b, nil
}
