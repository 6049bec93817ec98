// Package statefile writes small state files so that nothing is lost:
//   - WriteFile replaces a file atomically: a temp file in the same
//     directory is written, fsynced and renamed over the old one, and the
//     directory is fsynced, so a reader sees the old or the new content,
//     never a mix, and a crash keeps one of them;
//   - Update re-reads the file under a short exclusive flock and writes the
//     merged result, so concurrent writers never overwrite each other.
package statefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
)

// WriteFile atomically replaces path with data, created with perm, and
// makes the replacement durable.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// WriteFileNoSync atomically replaces path with data but does not fsync:
// readers see the old or the new content, never a mix, but after a crash
// the file may be the old one, or empty. Use it only for caches that can be
// rebuilt from a durable source.
func WriteFileNoSync(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, durable bool) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, unwrap(err))
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrap(err))
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrap(err))
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("write %s: fsync: %w", path, unwrap(err))
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrap(err))
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrap(err))
	}
	ok = true
	if !durable {
		return nil
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that a rename or create in it is durable.
func SyncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil && err != unix.EINVAL {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// Locked runs fn while holding an exclusive flock on the lock file name in
// dir (created 0664 if missing; never deleted). The lock is blocking and
// meant for short critical sections.
func Locked(dir *lockfile.Dir, name string, fn func() error) error {
	l, err := dir.Open(name)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.Lock(); err != nil {
		return err
	}
	return fn()
}

// Update re-reads path under the lock, passes its content (nil if it does
// not exist) to fn and atomically writes what fn returns. If fn returns
// nil data and nil error, nothing is written.
func Update(dir *lockfile.Dir, lockName, path string, perm os.FileMode, fn func(old []byte) ([]byte, error)) error {
	return Locked(dir, lockName, func() error {
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read %s: %w", path, unwrap(err))
		}
		data, err := fn(old)
		if err != nil || data == nil {
			return err
		}
		return WriteFile(path, data, perm)
	})
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
