//go:build linux

package lockfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenPrivate: a state dir's lock file is created 0600, one of ours
// left 0644 is tightened, another user's is refused (as root).
func TestOpenPrivate(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mode := func(name string) os.FileMode {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	l, err := d.OpenPrivate("new.lock")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if m := mode("new.lock"); m != PrivateMode {
		t.Errorf("created with mode %04o, want %04o", m, PrivateMode)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "old.lock"), 0o664)
	l, err = d.OpenPrivate("old.lock")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if m := mode("old.lock"); m != PrivateMode {
		t.Errorf("an older 0664 lock file is %04o after OpenPrivate, want %04o", m, PrivateMode)
	}
	if os.Geteuid() != 0 {
		t.Log("not root: another user's lock file not tried")
		return
	}
	if err := os.Chown(filepath.Join(dir, "old.lock"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = d.OpenPrivate("old.lock")
	if !errors.Is(err, ErrUnsafe) || !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("another user's lock file: err %v, want ErrUnsafe and ErrNotOurs naming uid 65534", err)
	}
}

// TestLockWithin: a wait for a busy lock ends at its deadline with a
// *WaitError naming the lock (and wrapping ErrBusy), or when its context
// is done, never hangs.
func TestLockWithin(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	holder, err := d.OpenPrivate("s.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock: %v, %v", ok, err)
	}
	w, err := d.OpenPrivate("s.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	err = w.LockWithin(context.Background(), 30*time.Millisecond)
	we, ok := errors.AsType[*WaitError](err)
	if !ok || !errors.Is(err, ErrBusy) || we.LockPath != filepath.Join(dir, "s.lock") || !strings.Contains(err.Error(), "still busy after 30ms") {
		t.Errorf("busy past the wait: err %v, want a *WaitError for %s wrapping ErrBusy", err, filepath.Join(dir, "s.lock"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.LockWithin(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v, want context.Canceled", err)
	}
	holder.Unlock()
	if err := w.LockWithin(context.Background(), time.Hour); err != nil {
		t.Errorf("free: %v", err)
	}
}
