package crongate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

// fakeShared is a shared gate.PauseStore in memory; err, when set, is every
// call's.
type fakeShared struct {
	mu     sync.Mutex
	pauses map[string]gate.Pause
	err    error
}

func (f *fakeShared) Get(_ context.Context, g string) (*gate.Pause, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pauses[g]; ok {
		return &p, f.err
	}
	return nil, f.err
}

func (f *fakeShared) List(context.Context) (map[string]gate.Pause, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pauses, f.err
}

func (f *fakeShared) Set(_ context.Context, g string, p gate.Pause) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	p.By = gate.ByCommand
	f.pauses[g] = p
	return nil
}

func (f *fakeShared) Clear(_ context.Context, g string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	_, had := f.pauses[g]
	delete(f.pauses, g)
	return had, nil
}

func (f *fakeShared) Resumes(context.Context) (map[string]time.Time, error) { return nil, f.err }

// With [etcd], a pause goes to the shared store only (one home); a resume
// lifts this host's and the shared one and says which it lifted; a store
// that cannot be reached is an error that says the outcome is unknown.
// A store given for a config without [etcd] is not used.
func TestSharedPauseAndResume(t *testing.T) {
	cfg := gate.DefaultConfig()
	cfg.StateDir = t.TempDir()
	cfg.Gates["g"] = &gate.GateConfig{Name: "g"}
	f := &fakeShared{pauses: map[string]gate.Pause{}}
	ps := gate.Pauses{Shared: f}
	local := gate.NewPauseFile(cfg.StateDir)
	ctx := context.Background()

	if err := Pause(cfg, ps, "g", gate.Pause{Reason: "r"}, false); err != nil {
		t.Fatal(err)
	}
	if lp, _ := local.List(ctx); len(lp) != 1 || len(f.pauses) != 0 {
		t.Fatalf("without [etcd]: local %v, shared %v; want the pause here only", lp, f.pauses)
	}
	local.Clear(ctx, "g")

	cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	if err := Pause(cfg, ps, "g", gate.Pause{Reason: "r"}, false); err != nil {
		t.Fatal(err)
	}
	if lp, _ := local.List(ctx); len(lp) != 0 || f.pauses["g"].Reason != "r" || f.pauses["g"].Who == "" {
		t.Fatalf("with [etcd]: local %v, shared %v; want the pause shared only, with who", lp, f.pauses)
	}
	r, err := Resume(cfg, ps, nil, "g", true)
	if err != nil || r.Msg != "resumed gate g: lifted its shared pause (every host)" {
		t.Fatalf("Resume = %+v, %v", r, err)
	}
	local.Set(ctx, "g", gate.Pause{})
	f.pauses["g"] = gate.Pause{By: gate.ByCommand}
	r, err = Resume(cfg, ps, nil, "g", true)
	if err != nil || r.Msg != "resumed gate g: lifted its command-line pauses, this host's and the shared one" {
		t.Fatalf("Resume of both = %+v, %v", r, err)
	}
	if res, _ := local.Resumes(ctx); res["g"].IsZero() {
		t.Error("the resume was not recorded")
	}

	f.err = fmt.Errorf("dial: %w", gate.ErrCoordinatorDown)
	err = Pause(cfg, ps, "g", gate.Pause{}, false)
	if !errors.Is(err, gate.ErrCoordinatorDown) || !strings.Contains(err.Error(), "may or may not have been set") {
		t.Fatalf("Pause with the store down: %v", err)
	}
	if _, err := Resume(cfg, ps, nil, "g", true); err == nil || !strings.Contains(err.Error(), "resume gate g: shared pause: ") {
		t.Fatalf("Resume with the store down: %v", err)
	}
}

// A config pause is lifted through the editor passed in, first, and only
// with force; the editor gets the config's path and its lock in the state
// dir. Without force nothing is called.
func TestResumeConfigPauseEdits(t *testing.T) {
	cfg := gate.DefaultConfig()
	cfg.Path = "/etc/cron-gate/config.toml"
	cfg.StateDir = t.TempDir()
	cfg.Gates["g"] = &gate.GateConfig{Name: "g", Paused: true}
	var calls []string
	edit := func(path, name string, paused bool, lockPath string) error {
		calls = append(calls, fmt.Sprintf("%s %s %v %s", path, name, paused, lockPath))
		return nil
	}
	if _, err := Resume(cfg, gate.Pauses{}, edit, "g", false); err == nil || len(calls) != 0 {
		t.Fatalf("resume without force: %v, edits %v", err, calls)
	}
	r, err := Resume(cfg, gate.Pauses{}, edit, "g", true)
	if err != nil || r.Msg != "resumed gate g: set paused = false in /etc/cron-gate/config.toml" {
		t.Fatalf("force-resume = %+v, %v", r, err)
	}
	if want := "/etc/cron-gate/config.toml g false " + gate.ConfigLockPath(cfg.StateDir); len(calls) != 1 || calls[0] != want {
		t.Fatalf("edits %q, want %q", calls, want)
	}
	failing := func(string, string, bool, string) error { return errors.New("inline table") }
	_, err = Resume(cfg, gate.Pauses{}, failing, "g", true)
	if ee, ok := errors.AsType[*EditError](err); !ok || ee.Hint() != "set paused = false under [gates.g] by hand" {
		t.Fatalf("failed edit: %v", err)
	}
}
