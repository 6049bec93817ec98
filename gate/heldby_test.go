//go:build linux

package gate

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/lockfile"
)

// A real flock held by a grandchild of a process that a running run of
// gate "holder" names as its command: the look-up finds the lock's holder
// in /proc/locks, walks up to the run's command and names the run. The
// end-to-end version, through the real binaries, is tests/timeline_test.go.
func TestHeldByNamesTheRunAbove(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	lock := filepath.Join(dir, "x.lock")
	// sh (the "command") runs flock (holds the lock) which runs sleep.
	sh := exec.Command("sh", "-c", "flock "+lock+" sleep 60; true")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	waitHeld(t, lock)
	j, err := journal.Open(state, "holder", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	// No cron-gate pid: the run is found through its command alone (the
	// test process, an ancestor too, is no run's).
	if err := j.Append(journal.Record{Run: "R1", Event: journal.EventStart, Time: time.Now(),
		ChildPid: sh.Process.Pid, ChildStart: runner.StartTicks(sh.Process.Pid)}); err != nil {
		t.Fatal(err)
	}
	got, more := heldBy(state, "self", lockHolders([]journal.Lock{{Path: lock, File: lock}}))
	if len(got) != 1 || more != 0 {
		t.Fatalf("held by %+v (+%d), want one holder", got, more)
	}
	h := got[0]
	if h.Gate != "holder" || h.Run != "R1" || h.Pid <= 0 || h.PidStart == 0 {
		t.Errorf("held by %+v, want gate holder run R1 with its pid and start", h)
	}
	if (h.Command != "") != lockfile.CommandsShownToAll() {
		t.Errorf("command %q recorded with CommandsShownToAll %v", h.Command, lockfile.CommandsShownToAll())
	}

	// The same process under a recycled identity (another start) is not
	// that run: the holder is named by pid alone.
	if err := j.Append(journal.Record{Run: "R1", Event: journal.EventEnd, Outcome: journal.OutcomeSuccess, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(journal.Record{Run: "R2", Event: journal.EventStart, Time: time.Now(),
		ChildPid: sh.Process.Pid, ChildStart: runner.StartTicks(sh.Process.Pid) + 1}); err != nil {
		t.Fatal(err)
	}
	got, _ = heldBy(state, "self", lockHolders([]journal.Lock{{Path: lock, File: lock}}))
	if len(got) != 1 || got[0].Gate != "" || got[0].Run != "" || got[0].Pid == 0 {
		t.Errorf("a recycled pid: held by %+v, want the process alone", got)
	}
	// The run itself is never its own holder.
	got, _ = heldBy(state, "R2", []lockfile.Holder{{Pid: sh.Process.Pid}})
	if len(got) != 1 || got[0].Run != "" {
		t.Errorf("own run: %+v", got)
	}
}

// heldBy keeps at most journal.MaxHeldBy holders, each pid once, and
// counts the rest; a holder not visible here (pid 0) is not one.
func TestHeldByBounded(t *testing.T) {
	var hs []lockfile.Holder
	for i := range journal.MaxHeldBy + 3 {
		hs = append(hs, lockfile.Holder{Pid: 1000000 + i}, lockfile.Holder{Pid: 1000000 + i})
	}
	hs = append(hs, lockfile.Holder{Pid: 0})
	got, more := heldBy(t.TempDir(), "self", hs)
	if len(got) != journal.MaxHeldBy || more != 3 {
		t.Errorf("%d holders and %d more, want %d and 3", len(got), more, journal.MaxHeldBy)
	}
}

// waitHeld waits until /proc/locks shows a lock on path.
func waitHeld(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, hs, err := lockfile.ReadLockTable().HoldersOf(path); err == nil && len(hs) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not locked after 10s", path)
}
