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
	"github.com/crongate/crongate/internal/safetext"
)

// fakeShared is a shared PauseStore in memory; err, when set, is every call's.
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

func sharedRun(t *testing.T, cfg *Config, shared PauseStore) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	code := Run(Invocation{Gate: "g", Argv: []string{"true"}, Config: cfg, Pauses: Pauses{Shared: shared},
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}})
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
	if code, stderr := sharedRun(t, cfg, f); code != 0 {
		t.Fatalf("no pause: %d %s", code, stderr)
	}
	f.pauses["g"] = Pause{By: ByCommand, Reason: "quota", Who: "ops@other"}
	if code, stderr := sharedRun(t, cfg, f); code != DefaultSkipCode || !strings.Contains(stderr, "paused by command") {
		t.Fatalf("shared pause: %d %s", code, stderr)
	}
	f.pauses["g"] = Pause{By: ByCommand, Until: time.Now().Add(-time.Minute)}
	if code, stderr := sharedRun(t, cfg, f); code != 0 {
		t.Fatalf("expired shared pause: %d %s", code, stderr)
	}
	f.err = fmt.Errorf("dial: %w", ErrCoordinatorDown)
	if code, stderr := sharedRun(t, cfg, f); code != DefaultSkipCode || !strings.Contains(stderr, "shared pauses unknown") {
		t.Fatalf("coordinator down: %d %s", code, stderr)
	}
	j, _ := journal.Open(cfg.StateDir, "g", 0)
	s, _ := j.Summary()
	j.Close()
	if s.LastSkip == nil || s.LastSkip.Reason != journal.ReasonCoordinatorDown {
		t.Fatalf("last skip %+v", s.LastSkip)
	}
	cfg.Etcd.RunOnDown = true
	if code, stderr := sharedRun(t, cfg, f); code != 0 || !strings.Contains(stderr, "on_coordinator_down") {
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
	if code, stderr := sharedRun(t, cfg, f); code != 125 || !strings.Contains(stderr, "corrupt value") {
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
	f := &fakeShared{pauses: map[string]Pause{"s": {By: ByCommand, Reason: "shared"}},
		resumes: map[string]time.Time{"l": resumed}}
	cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	ps := Pauses{Shared: f}
	if err := NewPauseFile(cfg.StateDir).Set(context.Background(), "l", Pause{Reason: "local"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Status(cfg, ps, now)
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
	rep, _ = Status(cfg, ps, now)
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "shared pauses") {
		t.Fatalf("warnings %q", rep.Warnings)
	}
}

// A shared store applies only to a config that names a cluster: serve
// keeps the store it opened while it re-reads a config whose [etcd] may
// have been removed since, and then only this host's pauses count.
func TestPausesFor(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StateDir = t.TempDir()
	f := &fakeShared{pauses: map[string]Pause{"g": {By: ByCommand, Reason: "shared"}}}
	ps := Pauses{Shared: f}.For(cfg)
	if ps.Shared != nil || ps.Local == nil || ps.Local.Dir() != cfg.StateDir {
		t.Fatalf("without [etcd]: %+v", ps)
	}
	if code, stderr := sharedRun(t, cfg, f); code != 0 {
		t.Fatalf("a store applied to a config without [etcd]: %d %s", code, stderr)
	}
	rep, _ := Status(cfg, Pauses{Shared: f}, time.Now())
	if len(rep.Gates) != 1 || rep.Gates[0].Pause != nil {
		t.Fatalf("status of a config without [etcd] shows the store's pauses: %+v", rep.Gates)
	}
	cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	if ps := (Pauses{Shared: f}).For(cfg); ps.Shared != f {
		t.Fatalf("with [etcd]: %+v", ps)
	}
	local := NewPauseFile(t.TempDir())
	if ps := (Pauses{Local: local}).For(cfg); ps.Local != local {
		t.Fatalf("a given local store was replaced: %+v", ps)
	}
}

// PauseOf: an active command-line pause first (it says who and until
// when), else the config's; an ended one is none.
func TestPauseOf(t *testing.T) {
	now := time.Now()
	g := &GateConfig{Name: "g"}
	cmd := &Pause{By: ByCommand, Reason: "cmd", Until: now.Add(time.Hour)}
	if p := PauseOf(g, nil, now); p != nil {
		t.Fatalf("no pause: %+v", p)
	}
	if p := PauseOf(g, cmd, now); p == nil || p.Reason != "cmd" {
		t.Fatalf("command-line pause: %+v", p)
	}
	if p := PauseOf(g, cmd, now.Add(2*time.Hour)); p != nil {
		t.Fatalf("ended pause: %+v", p)
	}
	g.Paused, g.Reason = true, "config"
	if p := PauseOf(g, cmd, now); p == nil || p.Reason != "cmd" {
		t.Fatalf("both: %+v; want the command-line one", p)
	}
	if p := PauseOf(g, cmd, now.Add(2*time.Hour)); p == nil || p.By != ByConfig || p.Reason != "config" {
		t.Fatalf("config pause: %+v", p)
	}
}
