//go:build linux

package statefile

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func inode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatalf("fstat: %v", err)
	}
	return st.Ino
}

// TestShareWalksOnce: while ShareDir is in effect, OpenDir and OpenDirToRead hand
// out the directory the first walk reached, even after the path has been
// pointed elsewhere; after release, a walk sees the new directory.
func TestShareWalksOnce(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "state")
	release := ShareDir(path)
	first, err := OpenDirToRead(path) // creates it, as the run's journal would
	if err != nil {
		t.Fatalf("OpenDirToRead under ShareDir: %v", err)
	}
	defer first.Close()
	want := inode(t, first.Fd())

	if err := os.Rename(path, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	second, err := OpenDir(path)
	if err != nil {
		t.Fatalf("OpenDir under ShareDir: %v", err)
	}
	if got := inode(t, second.Fd()); got != want {
		t.Errorf("OpenDir under ShareDir walked again: inode %d, want the first walk's %d", got, want)
	}
	second.Close()
	third, err := OpenDirToRead(path)
	if err != nil {
		t.Fatalf("OpenDirToRead under ShareDir: %v", err)
	}
	if got := inode(t, third.Fd()); got != want {
		t.Errorf("OpenDirToRead under ShareDir walked again: inode %d, want %d", got, want)
	}
	third.Close()
	if first.Fd() == third.Fd() {
		t.Errorf("handles share a descriptor: closing one would close the other")
	}

	release()
	fresh, err := OpenDir(path)
	if err != nil {
		t.Fatalf("OpenDir after release: %v", err)
	}
	defer fresh.Close()
	if got := inode(t, fresh.Fd()); got == want {
		t.Errorf("OpenDir after release reused the shared walk (inode %d)", got)
	}
}

// TestShareOtherPathWalks: ShareDir of one path leaves every other path's
// OpenDir as it was.
func TestShareOtherPathWalks(t *testing.T) {
	base := t.TempDir()
	defer ShareDir(filepath.Join(base, "a"))()
	b := filepath.Join(base, "b")
	d, err := OpenDir(b)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	want := inode(t, d.Fd())
	d.Close()
	if err := os.Rename(b, filepath.Join(base, "b-moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err = OpenDir(b)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	defer d.Close()
	if inode(t, d.Fd()) == want {
		t.Errorf("OpenDir of a path not shared returned the old directory")
	}
}
