//go:build linux

package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Tail returns the journal's last records, oldest first, reading at most
// maxBytes of its files from their ends (journal.jsonl, then the rotated
// journal.1.jsonl before it while bytes are left), and whether older
// records were left unread. A record cut by the byte bound is dropped,
// as is a torn last line (a record being written, or a crash's): only
// whole lines are records. It never writes and never waits on the gate's
// lock; what it reads is a snapshot that may miss the record appended
// meanwhile.
func (j *Journal) Tail(maxBytes int64) (recs []Record, cut bool, read int64, errs []error) {
	left := maxBytes
	var parts [][]Record
	for _, name := range []string{journalFile, journalOldFile} {
		if left <= 0 {
			if st, err := j.dir.Stat(name); err == nil && st.Size > 0 {
				cut = true
			}
			break
		}
		rs, c, n, err := j.tailOf(name, left)
		if err != nil {
			errs = append(errs, err)
		}
		parts = append(parts, rs)
		left -= n
		read += n
		if c {
			cut = true
			break
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		recs = append(recs, parts[i]...)
	}
	return recs, cut, read, errs
}

// tailOf reads the records in the last limit bytes of the file name; cut
// when the file is longer; n is how many bytes were read.
func (j *Journal) tailOf(name string, limit int64) (recs []Record, cut bool, n int64, err error) {
	f, err := j.dir.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, 0, nil
	}
	if err != nil {
		return nil, false, 0, journalErr(j.dir.Join(name), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, 0, fmt.Errorf("journal %s: %w", j.dir.Join(name), err)
	}
	size := st.Size()
	off := max(0, size-limit)
	buf := make([]byte, size-off)
	k, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, false, 0, fmt.Errorf("journal %s: %w", j.dir.Join(name), err)
	}
	buf = buf[:k]
	if off > 0 {
		// Started inside a line, unless the byte before is its end.
		var prev [1]byte
		if _, err := f.ReadAt(prev[:], off-1); err != nil || prev[0] != '\n' {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				buf = buf[i+1:]
			} else {
				buf = nil
			}
		}
	}
	recs, _ = ReadRecords(bytes.NewReader(buf)) // a torn or corrupt line is no record
	return recs, off > 0, int64(k), nil
}
