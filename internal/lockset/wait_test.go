//go:build linux

package lockset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
)

// A waiter for a busy path waits in flock(2) itself, as flock -w does: the
// kernel lists it as a blocked request in /proc/locks, it makes no attempt
// while the holder keeps the lock (not one per Poll interval), and a
// release by LOCK_UN — which inotify does not report, so that a waiter
// woken by inotify would see it only at its next Poll — lets it in with
// one more attempt.
func TestWaiterBlocksInFlock(t *testing.T) {
	dir := t.TempDir()
	lockDir := filepath.Join(dir, "locks")
	b := Local{LockDir: lockDir}
	target := filepath.Join(dir, "a")
	canon, err := pathlock.Canonical(target)
	if err != nil {
		t.Fatal(err)
	}
	// Create the lock file, then hold it through a descriptor of our own
	// that releases with LOCK_UN and stays open.
	first, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := first.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	first.Close()
	lockPath := filepath.Join(lockDir, pathlock.LockName(canon))
	holder, err := os.Open(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(holder.Fd()), &st); err != nil {
		t.Fatal(err)
	}

	c, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := &countClaim{Claim: c}
	done := make(chan error, 1)
	go func() {
		h, err := Acquire(context.Background(), cc, time.Hour)
		if err == nil {
			h.Release()
		}
		done <- err
	}()

	// The waiter shows as a blocked flock request on the lock's inode.
	deadline := time.Now().Add(time.Minute)
	for !blockedOn(t, uint64(st.Ino)) {
		if time.Now().After(deadline) {
			t.Fatalf("no blocked flock request on %s in /proc/locks within a minute: the waiter does not wait in flock(2)", lockPath)
		}
		time.Sleep(2 * time.Millisecond)
	}
	blocked, before := time.Now(), cc.n.Load()
	// Keep the lock for three Poll intervals: a waiter that polled would
	// try at least twice meanwhile.
	for time.Since(blocked) < 3*Poll {
		time.Sleep(10 * time.Millisecond)
	}
	if n := cc.n.Load() - before; n != 0 {
		t.Errorf("the waiter made %d attempts while the lock was held for %v; want none (it waits in flock)", n, time.Since(blocked))
	}
	before = cc.n.Load()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter did not get the lock within a minute of a LOCK_UN release")
	}
	if n := cc.n.Load() - before; n != 1 {
		t.Errorf("the waiter made %d attempts after the release; want 1", n)
	}
}

// blockedOn reports whether this process has a blocked FLOCK request on
// inode ino.
func blockedOn(t *testing.T, ino uint64) bool {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range lockfile.ParseProcLocks(data) {
		if pl.Waiter && pl.Kind == "FLOCK" && pl.Inode == ino && pl.Pid == os.Getpid() {
			return true
		}
	}
	return false
}

// The lock dir removed (rm -rf) between a waiter's failed attempt and its
// first wait, before it has a ticket: there is no queue to join, and the
// waiter goes on waiting without one (fairness is lost with the dir, as
// exclusion is) instead of failing; it takes the lock, on the inode it
// kept open, once the holder releases it.
func TestWaiterLockDirRemovedBeforeTicket(t *testing.T) {
	dir := t.TempDir()
	lockDir := filepath.Join(dir, "locks")
	b := Local{LockDir: lockDir}
	target := filepath.Join(dir, "a")
	holder, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	h, err := holder.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TryAcquire(); !errors.Is(err, ErrBusy) {
		t.Fatalf("second claim while held: %v, want busy", err)
	}
	if err := os.RemoveAll(lockDir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitChange(ctx, Poll); err != nil {
		t.Fatalf("first wait after the lock dir was removed: %v, want to go on waiting", err)
	}
	h.Release()
	for {
		h2, err := c.TryAcquire()
		if err == nil {
			h2.Release()
			return
		}
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("attempt after the release: %v", err)
		}
		if err := c.WaitChange(ctx, Poll); err != nil {
			t.Fatalf("waiting for the released lock in the removed dir: %v", err)
		}
	}
}
