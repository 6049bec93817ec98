package gate

import (
	"context"
	"testing"
	"time"
)

func TestResumedAt(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.StateDir = dir
	cfg.Gates["a"] = &GateConfig{Name: "a", Interval: time.Hour}
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	resumedOf := func(name string) time.Time {
		t.Helper()
		rep, err := Status(cfg, Pauses{}, now, name)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Gates[0].ResumedAt
	}
	if r := resumedOf("a"); !r.IsZero() {
		t.Fatalf("never resumed: %v", r)
	}
	// Recorded by cron-gate resume; pauses and resumes of other gates
	// keep it.
	at := now.Add(-time.Hour)
	local := NewPauseFile(dir)
	ctx := context.Background()
	if err := local.NoteResumed("a", at); err != nil {
		t.Fatal(err)
	}
	if err := local.Set(ctx, "b", Pause{Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Clear(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if r := resumedOf("a"); !r.Equal(at) {
		t.Fatalf("resumed_at %v, want %v", r, at)
	}
	// A command-line pause that expired after that resumed at its end.
	until := now.Add(-time.Minute)
	if err := local.Set(ctx, "a", Pause{Since: at, Until: until}); err != nil {
		t.Fatal(err)
	}
	if r := resumedOf("a"); !r.Equal(until) {
		t.Fatalf("expired pause: resumed_at %v, want %v", r, until)
	}
	// One that has not expired is a pause, not a resume.
	if err := local.Set(ctx, "a", Pause{Since: at, Until: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rep, _ := Status(cfg, Pauses{}, now, "a")
	if g := rep.Gates[0]; g.State != StatePaused || !g.ResumedAt.Equal(at) {
		t.Fatalf("active pause: %+v", g)
	}
	ps, err := local.List(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("List with resumes: %v %v", ps, err)
	}
}
