//go:build linux

// Package slots caps how many commands run at once with a pool of N slot
// lock files, the way the Python workers do: slot files are tried in index
// order and the first free one wins.
//
// A pool is named by a template containing "{i}" in its file name, e.g.
// /tmp/dependency-classifier-slot-{i}.lock with size 4 names the four files
// the classifier's Python code uses, so old and new processes share one cap.
//
// Guarantees: at most Size holders at a time among every process that uses
// the same files and size; a held slot is released when every descriptor of
// it is closed; slot files are never deleted.
package slots

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/crongate/crongate/lockfile"
)

// Placeholder is replaced by the slot index in a template.
const Placeholder = "{i}"

// MaxSize bounds a pool; larger caps are better served by not capping.
const MaxSize = 4096

// Pool is an open slot pool.
type Pool struct {
	Size     int
	Template string
	dir      *lockfile.Dir
	names    []string
	files    []*lockfile.Lock // opened lazily, kept open across retries
	held     int              // index of the held slot, -1 when none
}

// Check validates a size and template without touching the file system.
func Check(size int, template string) error {
	if size <= 0 {
		return fmt.Errorf("slot pool %s: size must be at least 1, got %d", template, size)
	}
	if size > MaxSize {
		return fmt.Errorf("slot pool %s: size %d is above the limit of %d", template, size, MaxSize)
	}
	base := filepath.Base(template)
	if !strings.Contains(base, Placeholder) {
		return fmt.Errorf("slot pool template %q must contain %s in its file name", template, Placeholder)
	}
	if strings.Contains(filepath.Dir(template), Placeholder) {
		return fmt.Errorf("slot pool template %q may use %s only in its file name", template, Placeholder)
	}
	return nil
}

// Open validates the pool and opens its directory (creating it when create
// is set). Slot files are created on first use.
func Open(size int, template string, create bool) (*Pool, error) {
	if err := Check(size, template); err != nil {
		return nil, err
	}
	dir, err := lockfile.OpenDir(filepath.Dir(template), create)
	if err != nil {
		return nil, fmt.Errorf("slot pool %s: %w", template, err)
	}
	base := filepath.Base(template)
	names := make([]string, size)
	for i := range names {
		names[i] = strings.ReplaceAll(base, Placeholder, strconv.Itoa(i))
	}
	return &Pool{Size: size, Template: template, dir: dir, names: names, files: make([]*lockfile.Lock, size), held: -1}, nil
}

// TryLock takes the first free slot without blocking and returns its index.
// When every slot is held it returns a *lockfile.BusyError (wrapping
// lockfile.ErrBusy) for the pool and holds nothing.
func (p *Pool) TryLock() (int, error) {
	var last *lockfile.Lock
	for i := range p.names {
		if p.files[i] == nil {
			l, err := p.dir.Open(p.names[i])
			if err != nil {
				return -1, err
			}
			p.files[i] = l
		}
		ok, err := p.files[i].TryLock()
		if err != nil {
			return -1, err
		}
		if ok {
			p.held = i
			return i, nil
		}
		last = p.files[i]
	}
	unit := "slots"
	if p.Size == 1 {
		unit = "slot"
	}
	b := lockfile.Busy(fmt.Sprintf("slot pool %s (%d %s)", p.Template, p.Size, unit), last)
	return -1, b
}

// Free counts the pool's slots that no process holds, as the lock table
// t (lockfile.ReadLockTable) shows them, without taking any: a probe
// with flock(2) would make another process's try see a free slot busy
// for a moment. ok is false when the table could not be read. The count
// can be stale by the time it is used; it never decides exclusion.
func (p *Pool) Free(t *lockfile.LockTable) (n int, ok bool) {
	if !t.Readable() {
		return 0, false
	}
	for i := range p.names {
		st, err := p.stat(i)
		if err != nil {
			return 0, false
		}
		if !t.Locked(uint64(st.Dev), st.Ino) {
			n++
		}
	}
	return n, true
}

// Key names the pool's files for the waiting queue of withlock: the
// device and inode of its first slot file, which every process using the
// pool shares, whatever path or size it gives.
func (p *Pool) Key() (string, error) {
	st, err := p.stat(0)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// stat opens slot i (kept open, as TryLock keeps it) and stats it.
func (p *Pool) stat(i int) (*syscall.Stat_t, error) {
	if p.files[i] == nil {
		l, err := p.dir.Open(p.names[i])
		if err != nil {
			return nil, err
		}
		p.files[i] = l
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(p.files[i].File().Fd()), &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Held returns the held slot's lock, or nil.
func (p *Pool) Held() *lockfile.Lock {
	if p.held < 0 {
		return nil
	}
	return p.files[p.held]
}

// Index returns the held slot's index, or -1.
func (p *Pool) Index() int { return p.held }

// Release closes the held slot, if any.
func (p *Pool) Release() {
	if p.held >= 0 {
		p.files[p.held].Close()
		p.files[p.held] = nil
		p.held = -1
	}
}

// Close releases the slot and every file kept open for retries.
func (p *Pool) Close() {
	p.Release()
	for i, f := range p.files {
		if f != nil {
			f.Close()
			p.files[i] = nil
		}
	}
	p.dir.Close()
}

// Watch returns the directory and file names whose release may free a slot.
func (p *Pool) Watch() (dir string, names []string) { return p.dir.Path, p.names }
