// Package blogworkers tests the blog-workers demo (examples/blog-workers:
// run.py and its Python workers): it plays the demo over a short simulated
// day and checks what the demo's README claims. The test lives here, not
// beside the demo, so that examples/ holds no Go package.
package blogworkers

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type demoResult struct {
	Scheme     string `json:"scheme"`
	Ticks      int    `json:"ticks"`
	Skipped    int    `json:"skipped"`
	Wasted     int    `json:"wasted"`
	Errors     int    `json:"errors"`
	Writes     int    `json:"writes"`
	LostWrites int    `json:"lost_writes"`
}

// need finds a program the demo cannot run without. Missing, it skips the
// test on a developer machine and fails it under CI (CI set), where every
// test must run.
func need(t *testing.T, name, hint string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not on PATH and CI is set: the demo test must run in CI (%s)", name, hint)
		}
		t.Skipf("%s is not on PATH (%s)", name, hint)
	}
}

// goTool is the go command: on PATH, else under $GOROOT or /usr/local/go.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	for _, dir := range []string{os.Getenv("GOROOT"), "/usr/local/go"} {
		if p := filepath.Join(dir, "bin", "go"); dir != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return "go"
}

// TestDemo builds the binaries as examples/run.sh does, plays five
// simulated hours (two translation runs) of the three crontabs, and
// asserts: the unlocked run loses writes (so the checker can fail), both
// locking schemes lose none, and cron-gate + withlock wastes fewer ticks
// than the old whole-worker locks.
func TestDemo(t *testing.T) {
	need(t, "python3", "apt-get install python3")
	need(t, "flock", "apt-get install util-linux")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	mod, err := exec.CommandContext(ctx, goTool(), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	bin := t.TempDir()
	build := exec.CommandContext(ctx, goTool(), "build", "-o", bin+"/", "./cmd/withlock", "./cmd/cron-gate")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/withlock ./cmd/cron-gate: %v\n%s", err, out)
	}

	work := t.TempDir()
	out := filepath.Join(work, "result.json")
	start := time.Now()
	run := exec.CommandContext(ctx, "python3", "run.py", "--bin", bin, "--hours", "5",
		"--workdir", filepath.Join(work, "runs"), "--json", out)
	run.Dir = filepath.Join(root, "examples", "blog-workers")
	text, err := run.CombinedOutput()
	t.Logf("run.py (%v):\n%s", time.Since(start).Round(time.Second), text)
	if err != nil {
		// run.py exits 1 when a check fails; the assertions below say which.
		if _, ok := err.(*exec.ExitError); !ok || run.ProcessState.ExitCode() != 1 {
			t.Fatalf("run.py: %v", err)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("run.py wrote no results: %v", err)
	}
	var res struct {
		Results []demoResult `json:"results"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	by := map[string]demoResult{}
	for _, r := range res.Results {
		by[r.Scheme] = r
	}
	none, old, cur := by["none"], by["old"], by["new"]
	for _, r := range []demoResult{none, old, cur} {
		if r.Ticks == 0 || r.Writes == 0 {
			t.Fatalf("scheme %q played no ticks or logged no writes: %+v", r.Scheme, r)
		}
		if r.Errors != 0 {
			t.Errorf("scheme %s: %d jobs failed (see the log above)", r.Scheme, r.Errors)
		}
	}
	if none.LostWrites == 0 {
		t.Errorf("no locks lost no write: the checker never fired, so it proves nothing (%+v)", none)
	}
	if old.LostWrites != 0 {
		t.Errorf("whole-worker locks lost %d writes", old.LostWrites)
	}
	if cur.LostWrites != 0 {
		t.Errorf("cron-gate + withlock lost %d writes", cur.LostWrites)
	}
	if cur.Wasted >= old.Wasted {
		t.Errorf("cron-gate + withlock wasted %d ticks, the old locks %d: expected fewer", cur.Wasted, old.Wasted)
	}
}
