package withlock

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/pathlock"
)

// TestBusyLocks: the busy report of a local line (what cron-gate
// records after a busy skip): paths canonical and deduplicated (relative
// ones from the working directory), at most runner.MaxBusyPaths of them
// with the rest counted, every path of the --first-of sets, every slot of
// every pool, in the lock dir made absolute.
func TestBusyLocks(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	canon := func(p string) string { c, _ := pathlock.Canonical(p); return c }
	lock := func(p string) runner.BusyLock {
		return runner.BusyLock{Path: canon(p), File: filepath.Join(dir, "locks", pathlock.LockName(canon(p)))}
	}
	var paths []string
	for i := range runner.MaxBusyPaths + 2 {
		paths = append(paths, fmt.Sprintf("p%03d.md", i))
	}
	req := lockset.Request{Paths: append([]string{"./p000.md"}, paths...), Pools: []lockset.PoolSpec{{Template: "s-{i}.lock", Size: 2}}}
	d := busyLocks("locks", req, nil)
	if len(d.Locks) != runner.MaxBusyPaths+2 || d.More != 2 {
		t.Fatalf("%d locks, %d more; want %d, 2 more", len(d.Locks), d.More, runner.MaxBusyPaths+2)
	}
	if d.Locks[0] != lock("p000.md") || d.Locks[1] != lock("p001.md") {
		t.Errorf("first locks %+v", d.Locks[:2])
	}
	slots := d.Locks[runner.MaxBusyPaths:]
	if slots[0] != (runner.BusyLock{Pool: canon("s-{i}.lock"), File: canon("s-0.lock")}) || slots[1].File != canon("s-1.lock") {
		t.Errorf("slots %+v", slots)
	}
	d = busyLocks("locks", lockset.Request{}, [][]string{{"a.md", "b.md"}, {"b.md", "c.md"}})
	if len(d.Locks) != 3 || d.Locks[2] != lock("c.md") || d.More != 0 {
		t.Errorf("--first-of sets: %+v", d)
	}
	d.V = 1 // as BusyReport.Write sets it
	if b, err := json.Marshal(d); err != nil || runner.ParseBusyReport(b) == nil {
		t.Errorf("a report withlock writes does not parse: %s %v", b, err)
	}
}
