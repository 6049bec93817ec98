package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/lockfile"
)

// blockedEnv is a state dir and a config, and journals written as
// cron-gate writes them.
type blockedEnv struct {
	t   *testing.T
	dir string
	cfg *Config
}

func newBlockedEnv(t *testing.T) *blockedEnv {
	cfg := DefaultConfig()
	cfg.StateDir = t.TempDir()
	return &blockedEnv{t: t, dir: cfg.StateDir, cfg: cfg}
}

func (e *blockedEnv) append(gate string, recs ...journal.Record) {
	e.t.Helper()
	j, err := journal.Open(e.dir, gate, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		if err := j.Append(r); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *blockedEnv) status(now time.Time, name string) GateStatus {
	e.t.Helper()
	rep, err := Status(e.cfg, Pauses{}, now, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return rep.Gates[0]
}

// heldLock makes a lock file and holds an exclusive flock on it through a
// descriptor of this process until the test ends.
func heldLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

func skipRec(at time.Time, reason, detail string) journal.Record {
	return journal.Record{Run: "s" + at.Format("150405"), Event: journal.EventSkip, Time: at, Outcome: journal.OutcomeSkipped, Reason: reason, Detail: detail}
}

func endRec(at time.Time, outcome string, exit int) journal.Record {
	return journal.Record{Run: "e" + at.Format("150405"), Event: journal.EventEnd, Time: at, Outcome: outcome, Exit: &exit}
}

// TestStatusBlocked (issue 16, item 1): a gate whose every attempt skips
// because a legacy lock is held is blocked, not ok, and the status names
// the holder (pid, command line, start time), looked up when it is read.
// One skip after a success is skipped, not ok; the rule is BlockedSkips
// skips in a row, or skips one interval apart.
func TestStatusBlocked(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	e := newBlockedEnv(t)
	lock := filepath.Join(e.dir, "old.lock")
	heldLock(t, lock)
	e.cfg.Gates["old"] = &GateConfig{Name: "old", LegacyLocks: []string{lock}}
	t0 := time.Now().Add(-time.Hour)
	e.append("old", endRec(t0, journal.OutcomeSuccess, 0), skipRec(t0.Add(time.Minute), journal.ReasonLegacyLock, "legacy lock held"))
	g := e.status(t0.Add(2*time.Minute), "old")
	if g.State != StateSkipped || g.Skipping == nil || g.Skipping.Blocked || g.Skipping.Skips != 1 {
		t.Fatalf("after one skip: state %s, %+v", g.State, g.Skipping)
	}
	e.append("old", skipRec(t0.Add(2*time.Minute), journal.ReasonLegacyLock, "held"), skipRec(t0.Add(3*time.Minute), journal.ReasonLegacyLock, "held"))
	g = e.status(t0.Add(4*time.Minute), "old")
	sk := g.Skipping
	if g.State != StateBlocked || sk == nil || !sk.Blocked || sk.Skips != 3 || !sk.Since.Equal(t0.Add(time.Minute)) || sk.Reason != journal.ReasonLegacyLock {
		t.Fatalf("after three skips: state %s, %+v", g.State, sk)
	}
	if len(sk.Locks) != 1 || sk.Locks[0].State != LockHeld || len(sk.Locks[0].Holders) != 1 {
		t.Fatalf("locks: %+v", sk.Locks)
	}
	h := sk.Locks[0].Holders[0]
	// The start time where /proc gives one (not qemu-user's emulated stat
	// of its own process, where the ARM tests run).
	known := runner.StartTicks(os.Getpid()) != 0
	if h.Pid != os.Getpid() || !strings.Contains(h.Command, filepath.Base(os.Args[0])) || (known && h.Started.IsZero()) || h.Started.After(time.Now()) {
		t.Errorf("holder: %+v", h)
	}
	if w := sk.Words(); !strings.Contains(w, "legacy lock "+lock+": held by pid ") || (known && !strings.Contains(w, "started ")) {
		t.Errorf("words: %q", w)
	}
	// A run that runs ends it: ok again.
	e.append("old", endRec(t0.Add(5*time.Minute), journal.OutcomeSuccess, 0))
	if g = e.status(t0.Add(6*time.Minute), "old"); g.State != StateOK || g.Skipping != nil {
		t.Fatalf("after a success: %s %+v", g.State, g.Skipping)
	}

	// With an interval, two skips one interval apart are blocked.
	e.cfg.Gates["iv"] = &GateConfig{Name: "iv", Interval: 30 * time.Minute, LegacyLocks: []string{lock}}
	e.append("iv", skipRec(t0, journal.ReasonLegacyLock, "held"), skipRec(t0.Add(10*time.Minute), journal.ReasonLegacyLock, "held"))
	if g = e.status(t0.Add(11*time.Minute), "iv"); g.State != StateSkipped {
		t.Fatalf("two skips 10m apart, interval 30m: %s", g.State)
	}
	e.append("iv", skipRec(t0.Add(30*time.Minute), journal.ReasonLegacyLock, "held"))
	if g = e.status(t0.Add(31*time.Minute), "iv"); g.State != StateBlocked {
		t.Fatalf("skips 30m apart, interval 30m: %s", g.State)
	}
}

// TestStatusBlockedBusy: a busy skip names the locks the command's
// withlock takes; each is looked up now: a held path lock names its
// holder, a free one is free, and a slot pool holds the gate back only
// when every slot is held.
func TestStatusBlockedBusy(t *testing.T) {
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	e := newBlockedEnv(t)
	held, free := filepath.Join(e.dir, "a.lock"), filepath.Join(e.dir, "b.lock")
	heldLock(t, held)
	os.WriteFile(free, nil, 0o644)
	s0, s1 := filepath.Join(e.dir, "s-0.lock"), filepath.Join(e.dir, "s-1.lock")
	heldLock(t, s0)
	locks := []journal.Lock{{Path: "/srv/a.md", File: held}, {Path: "/srv/b.md", File: free},
		{Pool: filepath.Join(e.dir, "s-{i}.lock"), File: s0}, {Pool: filepath.Join(e.dir, "s-{i}.lock"), File: s1}}
	t0 := time.Now().Add(-time.Hour)
	var recs []journal.Record
	for i := 0; i < 3; i++ {
		r := endRec(t0.Add(time.Duration(i)*time.Minute), journal.OutcomeSkipped, 75)
		r.Reason, r.Locks, r.LocksMore = journal.ReasonBusy, locks, 2
		recs = append(recs, r)
	}
	e.append("w", recs...)
	g := e.status(t0.Add(time.Hour), "w")
	sk := g.Skipping
	if g.State != StateBlocked || sk == nil || len(sk.Locks) != 4 || sk.LocksMore != 2 {
		t.Fatalf("busy: %s %+v", g.State, sk)
	}
	states := []string{}
	for _, l := range sk.Locks {
		states = append(states, l.Kind+":"+l.State)
	}
	if got := strings.Join(states, " "); got != "path:held path:free slot:held slot:free" {
		t.Errorf("lock states: %s", got)
	}
	if hs := sk.Holding(); len(hs) != 1 || hs[0].Path != "/srv/a.md" {
		t.Errorf("holding: %+v", hs)
	}
	if w := sk.Words(); !strings.HasPrefix(w, "/srv/a.md (lock "+held+"): held by pid ") {
		t.Errorf("words: %q", w)
	}
	// A command that is not withlock: no locks, and a note that says so.
	r := endRec(t0, journal.OutcomeSkipped, 75)
	r.Reason = journal.ReasonBusy
	e.append("x", r)
	if g := e.status(t0.Add(time.Hour), "x"); g.Skipping == nil || !strings.Contains(g.Skipping.Note, "withlock who") || g.State != StateSkipped {
		t.Errorf("busy without locks: %s %+v", g.State, g.Skipping)
	}
}

// TestStatusReadsProcLocksOnce (issue 16, item 8): /proc/locks is read
// at most once per Status call however many gates are blocked, and not
// at all when none skips.
func TestStatusReadsProcLocksOnce(t *testing.T) {
	e := newBlockedEnv(t)
	reads := 0
	old := readLockTable
	readLockTable = func() *lockfile.LockTable { reads++; return old() }
	defer func() { readLockTable = old }()
	t0 := time.Now().Add(-time.Hour)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		lock := filepath.Join(e.dir, n+".lock")
		heldLock(t, lock)
		e.cfg.Gates[n] = &GateConfig{Name: n, LegacyLocks: []string{lock, lock + ".2"}}
		for i := 0; i < 3; i++ {
			e.append(n, skipRec(t0.Add(time.Duration(i)*time.Minute), journal.ReasonLegacyLock, "held"))
		}
	}
	e.cfg.Gates["ok"] = &GateConfig{Name: "ok"}
	e.append("ok", endRec(t0, journal.OutcomeSuccess, 0))
	rep, err := Status(e.cfg, Pauses{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	blocked := 0
	for _, g := range rep.Gates {
		if g.State == StateBlocked {
			blocked++
		}
	}
	if blocked != 5 || reads != 1 {
		t.Fatalf("%d blocked gates read /proc/locks %d times, want 5 and 1", blocked, reads)
	}
	reads = 0
	if _, err := Status(e.cfg, Pauses{}, time.Now(), "ok"); err != nil || reads != 0 {
		t.Fatalf("no gate skipping: /proc/locks read %d times (%v)", reads, err)
	}
}

// TestResumedGateNotSkipped: a gate resumed after a pause whose ticks
// were skipped as paused is judged by what it did before (ok), never
// "skipped" because of the pause.
func TestResumedGateNotSkipped(t *testing.T) {
	e := newBlockedEnv(t)
	t0 := time.Now().Add(-time.Hour)
	e.append("g", endRec(t0, journal.OutcomeSuccess, 0), skipRec(t0.Add(time.Minute), journal.ReasonPaused, "paused"))
	if err := NewPauseFile(e.dir).Set(context.Background(), "g", Pause{Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if g := e.status(time.Now(), "g"); g.State != StatePaused {
		t.Fatalf("paused: %s", g.State)
	}
	if _, err := NewPauseFile(e.dir).Clear(context.Background(), "g"); err != nil {
		t.Fatal(err)
	}
	if g := e.status(time.Now(), "g"); g.State != StateOK || g.Skipping != nil {
		t.Fatalf("resumed: %s %+v", g.State, g.Skipping)
	}
	// One that never ran and was only skipped as paused never ran.
	e.append("h", skipRec(t0, journal.ReasonPaused, "paused"))
	if g := e.status(time.Now(), "h"); g.State != StateNeverRun {
		t.Fatalf("only paused skips, resumed: %s", g.State)
	}
}

// TestStatusOverrun: a run in progress longer than max_runtime is
// overrun; one within it, or a gate without max_runtime, is not.
func TestStatusOverrun(t *testing.T) {
	e := newBlockedEnv(t)
	e.cfg.Gates["r"] = &GateConfig{Name: "r", MaxRuntime: time.Hour}
	start := time.Now().Add(-2 * time.Hour)
	e.append("r", journal.Record{Run: "x", Event: journal.EventStart, Time: start, Pid: os.Getpid()})
	if g := e.status(start.Add(30*time.Minute), "r"); g.Overrun || g.MaxRuntime != "1h" || g.State != StateRunning {
		t.Fatalf("within max_runtime: %+v", g)
	}
	if g := e.status(start.Add(61*time.Minute), "r"); !g.Overrun {
		t.Fatalf("past max_runtime: %+v", g)
	}
	delete(e.cfg.Gates, "r")
	if g := e.status(start.Add(3*time.Hour), "r"); g.Overrun || g.MaxRuntime != "" {
		t.Fatalf("no max_runtime: %+v", g)
	}
}
