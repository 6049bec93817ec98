package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crongate/crongate/statefile"
)

// DefaultLogMaxBytes bounds a gate's output log when log_output is on.
const DefaultLogMaxBytes = 1 << 20

const (
	outputFile    = "output.log"
	outputOldFile = "output.1.log"
	runMarker     = "=== cron-gate run "
)

// outputLog keeps the command's stdout and stderr, interleaved in the order
// they were written (one writer, one lock), while passing both through.
// It holds at most max bytes of the run's output in memory, keeping the
// last part (errors come last), and appends the run as one section to
// output.log at the end, under the gate's lock, so concurrent runs never
// interleave. If cron-gate is killed the run's output is not kept.
type outputLog struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost int64
}

func newOutputLog(max int64) *outputLog {
	if max <= 0 {
		max = DefaultLogMaxBytes
	}
	return &outputLog{max: int(max)}
}

type teeWriter struct {
	l   *outputLog
	dst io.Writer
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.l.mu.Lock()
	t.l.buf = append(t.l.buf, p...)
	if over := len(t.l.buf) - t.l.max; over > 0 {
		t.l.lost += int64(over)
		t.l.buf = append(t.l.buf[:0], t.l.buf[over:]...)
	}
	t.l.mu.Unlock()
	return t.dst.Write(p)
}

func (l *outputLog) tee(dst io.Writer) io.Writer { return teeWriter{l: l, dst: dst} }

// save appends the run's section to the gate's output log, rotating the log
// to output.1.log first when it is over the bound.
func (l *outputLog) save(j *Journal, end Record) error {
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
	exit := "?"
	if end.Exit != nil {
		exit = fmt.Sprint(*end.Exit)
	}
	fmt.Fprintf(&sec, "%s%s ended %s: %s, exit %s\n", runMarker, end.Run, end.Time.Format(time.RFC3339Nano), end.Outcome, exit)
	return statefileLocked(j, func() error {
		p := filepath.Join(j.Dir, outputFile)
		if st, err := os.Stat(p); err == nil && st.Size()+int64(sec.Len()) > int64(2*l.max) {
			if err := os.Rename(p, filepath.Join(j.Dir, outputOldFile)); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unixNoFollow, 0o644)
		if err != nil {
			return unwrapPathErr(err)
		}
		defer f.Close()
		if _, err := f.Write(sec.Bytes()); err != nil {
			return err
		}
		return f.Sync()
	})
}

func statefileLocked(j *Journal, fn func() error) error {
	return statefile.Locked(j.dir, gateLockFile, fn)
}

// LastOutput returns the last complete run section of the gate's output
// log, or "" if there is none.
func (j *Journal) LastOutput() (string, error) {
	data, err := os.ReadFile(filepath.Join(j.Dir, outputFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	// Sections are appended whole, so the last "started" header begins
	// the last run's section.
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
		return "", nil
	}
	return string(data[start:]), nil
}

// LastOutputOf returns the last run's output kept for gate under stateDir.
func LastOutputOf(stateDir, gate string) (string, error) {
	j := &Journal{Gate: gate, Dir: filepath.Join(stateDir, "gates", gate)}
	return j.LastOutput()
}
