package tests

// TestConfigInPlaceWriter: runs and edits never act on a config that is
// being written (issue 12, item 3). An editor that saves in place (nano)
// truncates the file and writes it again; the writer here does the same,
// one line at a time with a short pause after each, stalls for 400 ms
// in the middle of every other save, and pauses between saves. Meanwhile, through the real binaries:
//
//   - two loops run `cron-gate --config C held -- true`: gate held is
//     paused in every version of the file the writer saves, and never
//     resumed, so it must never run (exit 75; 125 — the config never
//     settled — is allowed: no run either);
//   - one loop runs `cron-gate --config C resume rN` for N = 1..10, which
//     the writer pauses again in every save: each resume edits the file
//     (read, edit, rename). Before each save the writer reads the file and
//     requires every line of its own last version (values of paused
//     aside): a resume that read a half-written file would have written a
//     truncated config back.
//
// Before the stable read (gate/configread.go) and the pre-rename check
// (internal/gateconf/edit.go), hundreds of runs of held happened and the config was
// truncated dozens of times in a run of this test; the counts are printed.
// Nothing here is timed: the writer's pauses only make the race likely,
// and every wait has a generous deadline.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/testbin"
)

func TestConfigInPlaceWriter(t *testing.T) {
	testbin.Full(t, "a writer race over 12 saves: about 20 s")
	const (
		saves   = 12
		resumed = 10
		lineGap = 3 * time.Millisecond    // after each line: an editor writing in pieces
		stall   = 400 * time.Millisecond  // once in every other save: a loaded machine, a slow disk
		idle    = 1500 * time.Millisecond // between saves: a person editing
	)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.Mkdir(filepath.Join(dir, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + binDir + ":/usr/bin:/bin",
		"HOME=" + dir,
		"CRON_GATE_STATE_DIR=" + filepath.Join(dir, "state"),
		"CRON_GATE_CACHE_DIR=" + filepath.Join(dir, "cache"),
	}
	version := func(save int) []string {
		lines := []string{
			fmt.Sprintf("# cron-gate config written in place, line by line (save %d)", save),
			fmt.Sprintf("state_dir = %q", filepath.Join(dir, "state")),
			"history = 1000",
		}
		for i := 1; i <= resumed; i++ {
			lines = append(lines, "",
				fmt.Sprintf("# r%d: paused by every save, resumed by the test's loop", i),
				fmt.Sprintf("[gates.r%d]", i),
				fmt.Sprintf("reason = \"gate r%d\"", i),
				"paused = true")
		}
		return append(lines, "",
			"# held: paused in every version of this file, never resumed",
			"[gates.held]",
			"reason = \"held in every version\"",
			"paused = true",
			"# end of the file")
	}
	// The writer's own last version, with the values resume may change
	// made equal: what must be on disk whenever the writer is not writing.
	volatile := regexp.MustCompile(`\(save \d+\)|paused = false`)
	normal := func(b []byte) string {
		return volatile.ReplaceAllStringFunc(string(b), func(m string) string {
			if strings.HasPrefix(m, "paused") {
				return "paused = true"
			}
			return "(save N)"
		})
	}
	want := normal([]byte(strings.Join(version(0), "\n") + "\n"))
	if err := os.WriteFile(cfgPath, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}

	var (
		done      atomic.Bool
		mu        sync.Mutex
		truncated int
		sample    string
		runs      = map[int]int{} // exit code -> count, for held
		resumes   = map[int]int{} // exit code -> count
		unexpect  []string
	)
	check := func(when string) {
		got, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Errorf("%s: %v", when, err)
			return
		}
		if normal(got) != want {
			mu.Lock()
			truncated++
			if sample == "" {
				lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
				sample = fmt.Sprintf("%s, the config had %d lines (want %d), the last %q",
					when, len(lines), strings.Count(want, "\n"), lines[len(lines)-1])
			}
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "cron-gate"), args...)
		cmd.Env, cmd.Dir = env, dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, stderr.String()
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode(), stderr.String()
		}
		return -1, fmt.Sprintf("%v: %s", err, stderr.String())
	}

	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				code, stderr := run("--config", cfgPath, "held", "--", "true")
				mu.Lock()
				runs[code]++
				if code != 0 && code != 75 && code != 125 || code == 125 && len(unexpect) < 5 {
					unexpect = append(unexpect, fmt.Sprintf("held: exit %d: %s", code, strings.TrimSpace(stderr)))
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for i := 0; !done.Load(); i++ {
			code, stderr := run("--config", cfgPath, "resume", fmt.Sprintf("r%d", i%resumed+1))
			mu.Lock()
			resumes[code]++
			if code != 0 && len(unexpect) < 10 {
				unexpect = append(unexpect, fmt.Sprintf("resume: exit %d: %s", code, strings.TrimSpace(stderr)))
			}
			mu.Unlock()
		}
	})

	// The writer: as nano saves, truncate and write the file in place.
	for save := 1; save <= saves && ctx.Err() == nil; save++ {
		check(fmt.Sprintf("before save %d", save))
		f, err := os.OpenFile(cfgPath, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		lines := version(save)
		for i, line := range lines {
			if _, err := f.WriteString(line + "\n"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(lineGap)
			if save%2 == 0 && i == len(lines)/2 {
				// Half written, with held's paused line still to
				// come: "two reads that agree" took this for the
				// config (docs/reliability.md, F8).
				time.Sleep(stall)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(idle)
	}
	done.Store(true)
	wg.Wait()
	check("at the end")
	if ctx.Err() != nil {
		t.Fatalf("still running after 5 minutes")
	}

	t.Logf("%d saves; runs of held by exit code: %v; resumes by exit code: %v; truncated configs: %d",
		saves, runs, resumes, truncated)
	for _, u := range unexpect {
		t.Logf("%s", u)
	}
	if runs[0] != 0 {
		t.Errorf("gate held, paused in every version of the config, ran %d times", runs[0])
	}
	if truncated != 0 {
		t.Errorf("the config was found truncated %d times; first: %s", truncated, sample)
	}
	for code, n := range runs {
		if code != 0 && code != 75 && code != 125 {
			t.Errorf("held: %d runs exited %d (want 75, or 125 for a config that never settled)", n, code)
		}
	}
	// Not vacuous: the loops did run against the writer.
	if runs[75] < saves/3 {
		t.Errorf("only %d runs of held were skipped as paused; want at least %d", runs[75], saves/3)
	}
	if resumes[0] < saves/3 {
		t.Errorf("only %d resumes succeeded; want at least %d", resumes[0], saves/3)
	}
}
