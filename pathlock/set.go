//go:build linux

package pathlock

import (
	"github.com/crongate/crongate/lockfile"
)

// Set is the all-or-nothing lock set for a list of canonical paths, taken in
// the order given (CanonicalSet's sorted order, the order every Python
// caller uses, so a blocking caller can never deadlock against another).
//
// Lock files are lock dir + LockName(path). The target path itself is never
// created or opened.
type Set struct {
	dir   *lockfile.Dir
	paths []string
	names []string
	files []*lockfile.Lock // opened lazily, kept open across retries
	held  int              // number of leading paths whose lock is held
	busy  int              // index of the path the last TryLock found busy, -1 if none
}

// NewSet prepares a set over canonical (already canonicalised, sorted,
// unique) paths in dir. Nothing is opened yet.
func NewSet(dir *lockfile.Dir, canonical []string) *Set {
	names := make([]string, len(canonical))
	for i, p := range canonical {
		names[i] = LockName(p)
	}
	return &Set{dir: dir, paths: canonical, names: names, files: make([]*lockfile.Lock, len(canonical)), busy: -1}
}

// Paths returns the canonical paths of the set.
func (s *Set) Paths() []string { return s.paths }

// TryLock tries to lock every path without blocking. It returns nil when all
// are held. Otherwise nothing is held on return: it returns a
// *lockfile.BusyError for the first busy path, or the error that stopped it.
//
// Locks released after a partial attempt are closed, not just unlocked, so
// that waiters watching for the close see the release at once. Files that
// were only opened stay open for the next attempt, so a waiter's own retries
// wake nobody.
func (s *Set) TryLock() error {
	s.busy = -1
	for i, p := range s.paths {
		if s.files[i] == nil {
			l, err := s.dir.Open(s.names[i])
			if err != nil {
				s.Release()
				return err
			}
			s.files[i] = l
		}
		ok, err := s.files[i].TryLock()
		if err != nil || !ok {
			busy := lockfile.Busy(p, s.files[i])
			s.Release()
			if err != nil {
				return err
			}
			s.busy = i
			return busy
		}
		s.held = i + 1
	}
	return nil
}

// Busy returns the lock file that the last TryLock found held by another
// (it stays open), or nil. A waiter may block on it in flock(2) through a
// duplicate of its descriptor: the lock it then gets is the set's own, and
// the next TryLock finds it already held.
func (s *Set) Busy() *lockfile.Lock {
	if s.busy < 0 {
		return nil
	}
	return s.files[s.busy]
}

// Drop closes l, a lock file of the set that is open but not held by
// TryLock's count (one a waiter locked through a duplicate of its
// descriptor, then could not use because another path was busy), so that
// its lock is released. Nothing happens if l is not such a file.
func (s *Set) Drop(l *lockfile.Lock) {
	for i := s.held; i < len(s.files); i++ {
		if s.files[i] == l && l != nil {
			l.Close()
			s.files[i] = nil
			if s.busy == i {
				s.busy = -1
			}
			return
		}
	}
}

// Files returns the held lock files, for a child to inherit.
func (s *Set) Files() []*lockfile.Lock { return s.files[:s.held] }

// Release closes every held lock. Lock files stay on disk.
func (s *Set) Release() {
	for i := 0; i < s.held; i++ {
		s.files[i].Close()
		s.files[i] = nil
	}
	s.held = 0
}

// Close releases everything and closes files kept open for retries.
func (s *Set) Close() {
	s.Release()
	for i, f := range s.files {
		if f != nil {
			f.Close()
			s.files[i] = nil
		}
	}
}

// Watch returns the directory and lock file names whose release may let
// TryLock succeed, for a waiter to watch.
func (s *Set) Watch() (dir string, names []string) {
	return s.dir.Path, s.names
}
