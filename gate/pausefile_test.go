package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/safeopen"
)

func TestPauseExpiresAndConcurrentPausesMerge(t *testing.T) {
	dir := t.TempDir()
	f := NewPauseFile(dir)
	ctx := context.Background()
	now := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := "g" + string(rune('a'+i))
			if err := NewPauseFile(dir).Set(ctx, name, Pause{Reason: name, Since: now, Until: now.Add(time.Hour)}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	ps, err := f.List(ctx)
	if err != nil || len(ps) != 20 {
		t.Fatalf("pauses after 20 concurrent calls: %d, %v", len(ps), err)
	}
	p, err := f.Get(ctx, "ga")
	if err != nil || p == nil || p.By != ByCommand || !p.Active(now) {
		t.Fatalf("Get = %+v, %v; want an active command-line pause", p, err)
	}
	if p.Active(now.Add(2 * time.Hour)) {
		t.Fatal("pause did not expire by itself")
	}
	if had, _ := f.Clear(ctx, "ga"); !had {
		t.Fatal("resume found no pause")
	}
	if had, _ := f.Clear(ctx, "ga"); had {
		t.Fatal("a second resume found a pause")
	}
	ps, _ = f.List(ctx)
	if _, ok := ps["ga"]; ok || len(ps) != 19 {
		t.Fatalf("resume removed the wrong pauses: %v", ps)
	}
	if p, err := f.Get(ctx, "ga"); p != nil || err != nil {
		t.Fatalf("Get after the resume = %+v, %v", p, err)
	}
	// A corrupt pause file is an error, never "not paused": for a run, a
	// view and a change alike. So is one without its version.
	for _, bad := range []string{"{", `{"gates":{"ga":{"by":"command"}}}`} {
		os.WriteFile(filepath.Join(dir, pausesFile), []byte(bad), 0o644)
		if _, err := f.List(ctx); err == nil || !strings.Contains(err.Error(), "is corrupt") {
			t.Errorf("%s: List = %v; want corrupt", bad, err)
		}
		if _, err := f.Get(ctx, "ga"); err == nil || errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: Get = %v; want corrupt", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, pausesFile), []byte("{"), 0o644)
	if err := f.Set(ctx, "gb", Pause{}); err == nil {
		t.Error("Set over a corrupt file succeeded")
	}
}

// No state dir: no pauses, for a run and for a view; a view creates
// nothing.
func TestFileMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := NewPauseFile(dir)
	ps, err := f.List(context.Background())
	if err != nil || len(ps) != 0 {
		t.Fatalf("List = %v, %v", ps, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("List created the state dir")
	}
	if p, err := f.Get(context.Background(), "g"); p != nil || err != nil {
		t.Fatalf("Get = %+v, %v", p, err)
	}
}

// The resumes recorded by NoteResumed are kept across pauses and resumes
// of other gates.
func TestFileResumes(t *testing.T) {
	f := NewPauseFile(t.TempDir())
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	if err := f.NoteResumed("a", at); err != nil {
		t.Fatal(err)
	}
	f.Set(ctx, "b", Pause{Reason: "x"})
	f.Clear(ctx, "b")
	res, err := f.Resumes(ctx)
	if err != nil || len(res) != 1 || !res["a"].Equal(at) {
		t.Fatalf("Resumes = %v, %v; want a at %v", res, err, at)
	}
}

// A state dir another user owns is not this user's state: Get says so
// with ErrUntrusted (the run ignores its pauses, with a warning), while
// a view (List) still reads it.
func TestFileGetUntrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory another user's")
	}
	dir := filepath.Join(t.TempDir(), "state")
	os.Mkdir(dir, 0o777)
	os.WriteFile(filepath.Join(dir, pausesFile), []byte(`{"v":1,"gates":{"g":{"by":"command","reason":"planted"}}}`), 0o666)
	if err := os.Chown(dir, 64998, 64998); err != nil {
		t.Fatal(err)
	}
	f := NewPauseFile(dir)
	p, err := f.Get(context.Background(), "g")
	if p != nil || !errors.Is(err, ErrUntrusted) || !errors.Is(err, safeopen.ErrUnsafe) {
		t.Fatalf("Get = %+v, %v; want ErrUntrusted", p, err)
	}
	if want := "state dir " + dir + " is not safe to use ("; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); its pauses are ignored") {
		t.Errorf("error %q", err)
	}
	if ps, err := f.List(context.Background()); err != nil || ps["g"].Reason != "planted" {
		t.Errorf("List = %v, %v; a view reads any owner's state", ps, err)
	}
}

func TestMerge(t *testing.T) {
	now := time.Now()
	active, ended := Pause{Reason: "a"}, Pause{Reason: "e", Until: now.Add(-time.Second)}
	m := MergePauses(map[string]Pause{"x": active, "y": ended}, map[string]Pause{"x": ended, "y": active, "z": active}, now)
	if m["x"].Reason != "a" || m["y"].Reason != "a" || m["z"].Reason != "a" || len(m) != 3 {
		t.Fatalf("%+v", m)
	}
}

// A pauses.json over 16 MiB is refused with a message naming the limit,
// for a run (Get) and for a view (List): no file can make a call slow or
// big (docs/security.md).
func TestFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, pausesFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, pausesFile), 16<<20+1); err != nil {
		t.Fatal(err)
	}
	f := NewPauseFile(dir)
	if p, err := f.Get(context.Background(), "g"); p != nil || !errors.Is(err, safeopen.ErrTooLarge) || !strings.Contains(err.Error(), "16 MiB") {
		t.Errorf("Get = %+v, %v; want ErrTooLarge naming 16 MiB", p, err)
	}
	if _, err := f.List(context.Background()); !errors.Is(err, safeopen.ErrTooLarge) {
		t.Errorf("List: %v, want ErrTooLarge", err)
	}
}
