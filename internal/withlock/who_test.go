package withlock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crongate/crongate/pathlock"
)

// TestLineTargets: the locks of a withlock line, as cron-gate records
// them after a busy skip: paths canonical and deduplicated (relative ones
// from the working directory), --paths-from read, the lock dir from
// $WITHLOCK_LOCK_DIR, every slot of every pool; at most max paths, the
// rest counted; nothing for a line that is not a local withlock's.
func TestLineTargets(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("WITHLOCK_LOCK_DIR", filepath.Join(dir, "locks"))
	t.Setenv("WITHLOCK_BACKEND", "")
	os.WriteFile("list.txt", []byte("b.md\nc.md\na.md\n"), 0o644)
	ts, more := LineTargets([]string{"/usr/local/bin/withlock", "--paths", "a.md,./a.md", "--paths-from", "list.txt",
		"--slots", "2", "--slot-file", "s-{i}.lock", "--", "python3", "w.py", "--paths", "x"}, 2)
	canon := func(p string) string { c, _ := pathlock.Canonical(p); return c }
	want := []Target{
		{Path: canon("a.md"), File: filepath.Join(dir, "locks", pathlock.LockName(canon("a.md")))},
		{Path: canon("b.md"), File: filepath.Join(dir, "locks", pathlock.LockName(canon("b.md")))},
		{Pool: canon("s-{i}.lock"), File: canon("s-0.lock")},
		{Pool: canon("s-{i}.lock"), File: canon("s-1.lock")},
	}
	if len(ts) != len(want) || more != 1 {
		t.Fatalf("targets %+v, %d more; want %+v, 1 more", ts, more, want)
	}
	for i := range want {
		if ts[i] != want[i] {
			t.Errorf("target %d: %+v, want %+v", i, ts[i], want[i])
		}
	}
	for _, argv := range [][]string{
		{"python3", "w.py"},
		{"withlock", "--backend", "etcd", "--paths", "a.md", "--", "true"},
		{"withlock", "--paths", "a.md"},            // no command: not a line withlock runs
		{"withlock", "--help", "--", "true"},       // declined by the fast parser
		{"sh", "-c", "withlock --paths a -- true"}, // not read through a shell
	} {
		if ts, _ := LineTargets(argv, 64); len(ts) != 0 {
			t.Errorf("%q: %+v, want none", argv, ts)
		}
	}
	t.Setenv("WITHLOCK_BACKEND", "etcd")
	if ts, _ := LineTargets([]string{"withlock", "--paths", "a.md", "--", "true"}, 64); len(ts) != 0 {
		t.Errorf("WITHLOCK_BACKEND=etcd: %+v", ts)
	}
}
