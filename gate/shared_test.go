package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/tui"
)

// fakeShared is a SharedPauses in memory; err, when set, is every call's.
type fakeShared struct {
	mu      sync.Mutex
	pauses  map[string]Pause
	resumes map[string]time.Time
	err     error
}

func (f *fakeShared) Get(_ context.Context, g string) (*Pause, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if p, ok := f.pauses[g]; ok {
		return &p, nil
	}
	return nil, nil
}

func (f *fakeShared) List(context.Context) (map[string]Pause, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pauses, f.err
}

func (f *fakeShared) Set(_ context.Context, g string, p Pause) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pauses[g] = p
	return f.err
}

func (f *fakeShared) Clear(_ context.Context, g string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, had := f.pauses[g]
	delete(f.pauses, g)
	return had, f.err
}

func (f *fakeShared) Resumes(context.Context) (map[string]time.Time, error) {
	return f.resumes, f.err
}

func sharedRun(t *testing.T, cfg *Config) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	code := Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: cfg, Out: &tui.Printer{Prog: "cron-gate", W: &errb}})
	return code, errb.String()
}

// The run path consults the shared store after the local pauses: a shared
// pause skips; an unreachable store skips (reason coordinator_down) unless
// on_coordinator_down = "run"; any other error refuses (125).
func TestRunSharedPauses(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StateDir = t.TempDir()
	cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	f := &fakeShared{pauses: map[string]Pause{}}
	cfg.Shared = f
	if code, stderr := sharedRun(t, cfg); code != 0 {
		t.Fatalf("no pause: %d %s", code, stderr)
	}
	f.pauses["g"] = Pause{By: PausedByCommand, Reason: "quota", Who: "ops@other"}
	if code, stderr := sharedRun(t, cfg); code != DefaultSkipCode || !strings.Contains(stderr, "paused by command") {
		t.Fatalf("shared pause: %d %s", code, stderr)
	}
	f.pauses["g"] = Pause{By: PausedByCommand, Until: time.Now().Add(-time.Minute)}
	if code, stderr := sharedRun(t, cfg); code != 0 {
		t.Fatalf("expired shared pause: %d %s", code, stderr)
	}
	f.err = fmt.Errorf("dial: %w", ErrCoordinatorDown)
	if code, stderr := sharedRun(t, cfg); code != DefaultSkipCode || !strings.Contains(stderr, "shared pauses unknown") {
		t.Fatalf("coordinator down: %d %s", code, stderr)
	}
	j, _ := journal.Open(cfg.StateDir, "g", 0)
	s, _ := j.Summary()
	j.Close()
	if s.LastSkip == nil || s.LastSkip.Reason != journal.ReasonCoordinatorDown {
		t.Fatalf("last skip %+v", s.LastSkip)
	}
	cfg.Etcd.RunOnDown = true
	if code, stderr := sharedRun(t, cfg); code != 0 || !strings.Contains(stderr, "on_coordinator_down") {
		t.Fatalf("coordinator down, run: %d %s", code, stderr)
	}
	// The journal says so: the start record of that run carries the note.
	j, _ = journal.Open(cfg.StateDir, "g", 0)
	s, _ = j.Summary()
	j.Close()
	if s.LastStart == nil || !strings.Contains(s.LastStart.Detail, "on_coordinator_down") {
		t.Fatalf("last start %+v", s.LastStart)
	}
	f.err = errors.New("corrupt value at /cron-gate/pauses/g")
	if code, stderr := sharedRun(t, cfg); code != 125 || !strings.Contains(stderr, "corrupt value") {
		t.Fatalf("corrupt: %d %s", code, stderr)
	}
}

// Status shows shared pauses and resume times beside the local ones, and
// warns when the store cannot be read.
func TestStatusSharedPauses(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StateDir = t.TempDir()
	now := time.Now()
	resumed := now.Add(-time.Hour).Truncate(time.Second)
	f := &fakeShared{pauses: map[string]Pause{"s": {By: PausedByCommand, Reason: "shared"}},
		resumes: map[string]time.Time{"l": resumed}}
	cfg.Shared = f
	if err := SetPause(cfg.StateDir, "l", Pause{Reason: "local"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Status(cfg, now)
	if err != nil || len(rep.Gates) != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	for _, g := range rep.Gates {
		want := map[string]string{"l": "local", "s": "shared"}[g.Name]
		if g.State != "paused" || g.Pause == nil || g.Pause.Reason != want {
			t.Errorf("gate %s: %+v", g.Name, g)
		}
	}
	if !rep.Gates[0].ResumedAt.Equal(resumed) {
		t.Errorf("resumed_at %v, want %v", rep.Gates[0].ResumedAt, resumed)
	}
	f.err = ErrCoordinatorDown
	rep, _ = Status(cfg, now)
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "shared pauses") {
		t.Fatalf("warnings %q", rep.Warnings)
	}
}

func TestMergeShared(t *testing.T) {
	now := time.Now()
	active, ended := Pause{Reason: "a"}, Pause{Reason: "e", Until: now.Add(-time.Second)}
	m := mergeShared(map[string]Pause{"x": active, "y": ended}, map[string]Pause{"x": ended, "y": active, "z": active}, now)
	if m["x"].Reason != "a" || m["y"].Reason != "a" || m["z"].Reason != "a" || len(m) != 3 {
		t.Fatalf("%+v", m)
	}
}
