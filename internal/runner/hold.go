//go:build linux

package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Held output is what a chronic run (cron-gate's `chronic`) does with the
// command's stdout and stderr: it keeps them, in the order they came, and
// writes them out only when the run has failed (Release), so that cron,
// which mails every byte a job prints, mails a failure and never a
// success. What is held stays in memory up to HoldMemory bytes, then goes
// to a private temporary file (O_TMPFILE in $TMPDIR, else /tmp: it has no
// name, and vanishes with the process, however it ends). Nothing is
// dropped: when the file cannot be made or written, or the output grows
// past HoldMax, everything held is written out at once and the rest
// passes through as it comes (Passed says so).

// HoldMemory bounds the output a Held keeps in memory before it spills
// to its temporary file, and HoldMax the output it holds at all.
const (
	HoldMemory = 256 << 10
	HoldMax    = 64 << 20
)

// Held holds a command's output; Stdout and Stderr are the writers to
// give the command (as Spec.Stdout and Spec.Stderr, so that the runner
// owns the pipes).
type Held struct {
	mu      sync.Mutex
	dst     [2]io.Writer // where the output goes when shown: stdout, stderr
	mem     []byte       // chunks, encoded as in the spill file, while in memory
	spill   *os.File     // the spill file, once the memory is full
	size    int64        // bytes held, framing included
	passed  error        // why the output passes through; nil: it is held
	dropped bool         // Release(false) has run: what comes later is dropped
	one     bool         // stdout and stderr are one file
	last    [2]byte      // the last byte written out to each destination; 0: none
}

// A chunk is framed as one byte (0 stdout, 1 stderr), its length (4
// bytes, big endian), then its bytes.
const chunkHead = 5

// NewHeld holds output meant for stdout and stderr; one says they are one
// file (SameFile).
func NewHeld(stdout, stderr io.Writer, one bool) *Held {
	return &Held{dst: [2]io.Writer{stdout, stderr}, one: one}
}

// out writes p out to destination fd, noting its last byte.
func (h *Held) out(fd byte, p []byte) (int, error) {
	if len(p) > 0 {
		h.last[fd] = p[len(p)-1]
	}
	return h.dst[fd].Write(p)
}

// EndsMidLine reports whether what was written out to stderr (to stdout,
// when they are one file and it was written there last) ends without a
// line feed: a line of the wrapper's own must then start a new line.
func (h *Held) EndsMidLine() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.last[1]
	if h.one && h.last[0] != 0 {
		b = h.last[0]
	}
	return b != 0 && b != '\n'
}

// Stdout is the writer for the command's stdout.
func (h *Held) Stdout() io.Writer { return heldWriter{h, 0} }

// Stderr is the writer for the command's stderr.
func (h *Held) Stderr() io.Writer { return heldWriter{h, 1} }

type heldWriter struct {
	h  *Held
	fd byte
}

func (w heldWriter) Write(p []byte) (int, error) { return w.h.write(w.fd, p) }

func (h *Held) write(fd byte, p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped {
		return len(p), nil
	}
	if h.passed != nil {
		return h.out(fd, p)
	}
	if h.size+int64(chunkHead+len(p)) > HoldMax {
		h.pass(fmt.Errorf("the output grew past %d MiB", HoldMax>>20))
		return h.out(fd, p)
	}
	var head [chunkHead]byte
	head[0] = fd
	binary.BigEndian.PutUint32(head[1:], uint32(len(p)))
	if h.spill == nil && len(h.mem)+chunkHead+len(p) > HoldMemory {
		if err := h.spillMem(); err != nil {
			h.pass(err)
			return h.out(fd, p)
		}
	}
	if h.spill == nil {
		h.mem = append(append(h.mem, head[:]...), p...)
	} else if _, err := h.spill.Write(append(head[:], p...)); err != nil {
		h.pass(fmt.Errorf("temporary file: %w", err))
		return h.out(fd, p)
	}
	h.size += int64(chunkHead + len(p))
	return len(p), nil
}

// spillMem moves what memory holds to a new spill file.
func (h *Held) spillMem() error {
	f, err := tempFile()
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	if _, err := f.Write(h.mem); err != nil {
		f.Close()
		return fmt.Errorf("temporary file: %w", err)
	}
	h.spill, h.mem = f, nil
	return nil
}

// tempFile is an unnamed file, readable by its owner only, in $TMPDIR
// (else /tmp); on a file system without O_TMPFILE, a named one removed
// at once.
func tempFile() (*os.File, error) {
	dir := os.TempDir()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), "held output"), nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	f, err := os.CreateTemp(dir, ".cron-gate-held-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// pass writes out everything held, in order, and lets the rest pass
// through: why says what made the output stop being held. Called with
// mu held.
func (h *Held) pass(why error) {
	h.passed = why
	h.replay()
}

// replay writes what is held to its destinations, in order, and lets go
// of it. A destination that refuses is not retried (as with output that
// is not held). Called with mu held.
func (h *Held) replay() {
	var r io.Reader = bytes.NewReader(h.mem)
	if h.spill != nil {
		r = io.NewSectionReader(h.spill, 0, h.size)
	}
	var head [chunkHead]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			break
		}
		n := int64(binary.BigEndian.Uint32(head[1:]))
		fd := head[0] & 1
		if _, err := io.CopyBuffer(lastWriter{h, fd}, io.LimitReader(r, n), buf); err != nil {
			// The destination refused: skip the rest of this chunk.
			if _, err := io.CopyN(io.Discard, r, n); err != nil {
				break
			}
		}
	}
	h.free()
}

func (h *Held) free() {
	if h.spill != nil {
		h.spill.Close()
		h.spill = nil
	}
	h.mem, h.size = nil, 0
}

// Release ends the hold: show writes out what is held, in order;
// otherwise it is let go of, and output that still comes (from a process
// the command left behind) is dropped. Call it once the output has been
// drained (Child.Drain).
func (h *Held) Release(show bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passed != nil {
		return
	}
	if show {
		h.replay()
		h.passed = errReleased
		return
	}
	h.free()
	h.dropped = true
}

var errReleased = errors.New("released")

// Passed returns why the output was not held to the end (written out as
// it came once the reason arose), or nil.
func (h *Held) Passed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passed == errReleased {
		return nil
	}
	return h.passed
}

// SameFile reports whether a and b are one open file (one pipe, one
// terminal): cron gives a job's stdout and stderr one pipe.
func SameFile(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(int(a.Fd()), &sa) != nil || unix.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// lastWriter writes out to one destination of a Held whose mu is held.
type lastWriter struct {
	h  *Held
	fd byte
}

func (w lastWriter) Write(p []byte) (int, error) { return w.h.out(w.fd, p) }
