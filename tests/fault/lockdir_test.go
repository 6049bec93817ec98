package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockDirRemoved removes the lock dir (rm -rf) while processes hold
// locks in it, and records what happens. Deleting lock files is exactly
// what the README's "never deletes a lock file" rule is about: a holder
// keeps its lock on the old, now nameless inode, and a newcomer creates a
// fresh dir and a fresh file and locks that. Exclusion between old holders
// and new takers is LOST; no lock-file scheme can prevent that once the
// files are deleted. What withlock must still do, and this test checks:
//
//   - the old holder is not disturbed: its command runs to the end, its
//     exit code passes through, withlock does not crash;
//   - newcomers recreate the dir and exclude each other again;
//   - a waiter (--wait) that was watching the removed dir is not stuck
//     until its deadline: it falls back to polling and takes the old lock
//     as soon as the old holder releases it;
//   - once everything has exited, every lock is free.
func TestLockDirRemoved(t *testing.T) {
	full(t)
	root, env := chainRoot(t)
	lockDir := filepath.Join(root, "locks")
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	holder := func(name, path string, code int) (*proc, string) {
		started, release := filepath.Join(root, name+".started"), filepath.Join(root, name+".release")
		p := start(t, env, bin("withlock"), "--paths", path, "--", "sh", "-c",
			fmt.Sprintf("touch %s; while [ ! -e %s ]; do sleep 0.005; done; exit %d", started, release, code))
		waitFile(t, p, started)
		return p, release
	}

	h, releaseH := holder("h", a, 6)
	// A waiter on b, whose holder is hb: it watches the lock dir.
	hb, releaseHB := holder("hb", b, 0)
	w := start(t, env, bin("withlock"), "--wait", "15s", "--paths", b, "--", "touch", filepath.Join(root, "w.ran"))
	// Removed once the waiter waits (blocked in flock(2) on b's lock, with
	// its queue ticket taken before): the case of a waiter that loses its
	// dir while it waits. A dir removed before the waiter takes its
	// ticket is internal/lockset's TestWaiterLockDirRemovedBeforeTicket.
	waitBlocked(t, w)

	if err := os.RemoveAll(lockDir); err != nil {
		t.Fatal(err)
	}

	// The old holder's lock is on a deleted inode now.
	if fds := openUnder(h.cmd.Process.Pid, lockDir); len(fds) != 1 || !strings.HasSuffix(fds[0], " (deleted)") {
		t.Errorf("holder's lock descriptors after rm -rf: %q, want one deleted file", fds)
	}

	// A newcomer on a: a fresh dir, a fresh file — it runs although h
	// still "holds" a. This is the loss of exclusion the README warns
	// about, recorded here so that nobody believes otherwise.
	n1, n1release := holder("n1", a, 0)
	if _, err := os.Stat(lockDir); err != nil {
		t.Fatalf("the newcomer did not recreate the lock dir: %v", err)
	}
	// Newcomers exclude each other again.
	if res, _, e := run(t, env, bin("withlock"), "--paths", a, "--", "true"); res != (result{code: 75}) {
		t.Errorf("a second newcomer while the first holds the fresh lock: %v %s, want 75", res, e)
	}

	// The old holder finishes normally: its code comes through.
	os.WriteFile(releaseH, nil, 0o644)
	if res := h.wait(t); res != (result{code: 6}) {
		t.Errorf("old holder: %v, want exit 6; stderr: %s", res, h.stderr())
	}
	// The waiter takes b (the old inode, which it kept open) soon after hb
	// releases it, well before its 15 s deadline.
	released := time.Now()
	os.WriteFile(releaseHB, nil, 0o644)
	if res := hb.wait(t); res != (result{}) {
		t.Errorf("holder of b: %v", res)
	}
	if res := w.wait(t); res != (result{}) {
		t.Errorf("waiter: %v, want exit 0; stderr: %s", res, w.stderr())
	}
	if d := time.Since(released); d > 12*time.Second {
		t.Errorf("the waiter took %v after the release; it should fall back to polling (%v)", d, 250*time.Millisecond)
	} else {
		t.Logf("the waiter ran %v after the release of a lock in the removed dir", d.Round(time.Millisecond))
	}
	os.WriteFile(n1release, nil, 0o644)
	if res := n1.wait(t); res != (result{}) {
		t.Errorf("newcomer: %v", res)
	}
	for _, p := range []*proc{h, hb, w, n1} {
		if strings.Contains(p.stderr(), "panic") {
			t.Errorf("%v: %s", p.cmd.Args, p.stderr())
		}
	}
	if left := waitNoProcs("FAULT_RUN="+root, time.Now().Add(deadline)); len(left) > 0 {
		t.Fatalf("left running: %v", left)
	}
	if res, _, e := run(t, env, bin("withlock"), "--paths", a+","+b, "--", "true"); res != (result{}) {
		t.Fatalf("locks not free afterwards: %v %s", res, e)
	}

	// The lock dir removed and replaced by a symlink (by someone who
	// could write its parent) while a lock is held: the holder is not
	// disturbed, newcomers refuse the symlink (125).
	h2, release2 := holder("h2", a, 0)
	os.RemoveAll(lockDir)
	other := filepath.Join(root, "elsewhere")
	os.Mkdir(other, 0o755)
	if err := os.Symlink(other, lockDir); err != nil {
		t.Fatal(err)
	}
	if res, _, e := run(t, env, bin("withlock"), "--paths", a, "--", "true"); res != (result{code: 125}) || !strings.Contains(e, "symlink") {
		t.Errorf("newcomer with a symlinked lock dir: %v %s, want 125", res, e)
	}
	if ents, _ := os.ReadDir(other); len(ents) > 0 {
		t.Errorf("withlock wrote through the symlink: %v", ents)
	}
	os.WriteFile(release2, nil, 0o644)
	if res := h2.wait(t); res != (result{}) {
		t.Errorf("holder: %v %s", res, h2.stderr())
	}
}

// openUnder lists pid's descriptors (and its children's) that point under
// dir, as readlink shows them.
func openUnder(pid int, dir string) []string {
	var out []string
	pids := []int{pid}
	for i := 0; i < len(pids); i++ {
		pids = append(pids, childrenOf(pids[i])...)
	}
	seen := map[string]bool{}
	for _, p := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", p))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, dir+"/") && !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}

// waitBlocked waits until p is blocked in flock(2): /proc/locks lists a
// blocked request ("->") of its PID.
func waitBlocked(t *testing.T, p *proc) {
	t.Helper()
	end := time.Now().Add(deadline)
	pid := strconv.Itoa(p.cmd.Process.Pid)
	for time.Now().Before(end) {
		if p.exited() {
			t.Fatalf("%v ended (%v) early; stderr: %s", p.cmd.Args, p.res, p.stderr())
		}
		data, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) > 5 && f[1] == "->" && f[5] == pid {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%v did not block in flock(2) within %v", p.cmd.Args, deadline)
}
