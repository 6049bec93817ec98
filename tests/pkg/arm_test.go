//go:build pkg

package pkg

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// armPackages are the packages whose unit tests run under emulation: the
// libraries and the runner, where 32-bit ints, 64-bit atomics and time_t
// matter.
var armPackages = []string{"pathlock", "lockfile", "slots", "internal/runner", "gate", "gate/journal"}

// qemuWrapper writes a script that runs the ARM binary bin under qemu with
// argv[0] set to the script itself: binfmt_misc is not mounted here, so a
// program that execs itself or a companion (the runner's helper
// processes, withlock's and cron-gate's hand-offs) must exec a script,
// which the kernel runs natively, and the script starts the emulator.
func qemuWrapper(t *testing.T, path, qemu, bin string) {
	t.Helper()
	write(t, path, fmt.Sprintf("#!/bin/sh\nexec %s -0 \"$0\" %s \"$@\"\n", qemu, bin), 0o755)
}

// The unit tests of the libraries and the runner, cross-compiled for
// arm64 and armv7 (GOARM=7, a 32-bit Raspberry Pi OS) and run under
// qemu-user; then withlock and cron-gate from the release tarball under
// emulation: a lock, a busy lock (75), a gate run from the cache by the
// binary alone (no companion for a config without [etcd]), a paused gate
// (75), the journal and status. Prints each
// build's per-call cost as a ratio to a bare Go runner in the same
// environment, beside the native ratio (emulation is not a Pi: only
// ratios are comparable).
func TestARM(t *testing.T) {
	dir := release(t)
	v := version(t)
	native := callRatios(t, "", filepath.Join(dir, "cron-gate-"+v+"-linux-amd64.tar.gz"), "amd64", "")
	report := []string{fmt.Sprintf("native amd64: withlock %.2fx, cron-gate %.2fx", native[0], native[1])}
	for _, a := range arches {
		if a.qemu == "" {
			continue
		}
		t.Run(a.deb, func(t *testing.T) {
			qemu := need(t, a.qemu, "qemu-user-static")
			unitTests(t, qemu, a.goarch, a.goarm, a.deb)
			smoke(t, qemu, filepath.Join(dir, "cron-gate-"+v+"-linux-"+a.deb+".tar.gz"), a.deb)
			r := callRatios(t, qemu, filepath.Join(dir, "cron-gate-"+v+"-linux-"+a.deb+".tar.gz"), a.goarch, a.goarm)
			report = append(report, fmt.Sprintf("%s under %s: withlock %.2fx, cron-gate %.2fx", a.deb, a.qemu, r[0], r[1]))
		})
	}
	fmt.Printf("ARM per call, as a ratio to a bare Go os/exec runner in the same environment (median of %d interleaved rounds): %s\n",
		ratioRounds, strings.Join(report, "; "))
}

// unitTests cross-compiles and runs armPackages' tests.
func unitTests(t *testing.T, qemu, goarch, goarm, name string) {
	bin := t.TempDir()
	env := append(os.Environ(), "GOARCH="+goarch, "GOARM="+goarm, "CGO_ENABLED=0")
	for _, p := range armPackages {
		n := strings.ReplaceAll(p, "/", "_")
		test := filepath.Join(bin, n+".test")
		// -trimpath: the release's build flags, so that the standard
		// library and the modules compiled for it are reused.
		run(t, root, env, "go", "test", "-c", "-trimpath", "-o", test, "./"+p)
		wrap := filepath.Join(bin, n)
		qemuWrapper(t, wrap, qemu, test)
		start := time.Now()
		code, out := exitCode(t, filepath.Join(root, p), nil, wrap, "-test.count=1", "-test.v", "-test.timeout=15m")
		passed, skipped := strings.Count(out, "--- PASS"), strings.Count(out, "--- SKIP")
		if code != 0 {
			lines := strings.Split(out, "\n")
			t.Errorf("%s: %s tests under %s: exit %d\n%s", name, p, qemu, code, strings.Join(lines[max(0, len(lines)-80):], "\n"))
			continue
		}
		if skipped > 0 && os.Getenv("CI") != "" {
			t.Errorf("%s: %s: %d tests skipped under emulation; CI requires every one", name, p, skipped)
		}
		fmt.Printf("ARM %s %s: ok, %d passed, %d skipped under %s (%v)\n", name, p, passed, skipped, qemu, time.Since(start).Round(100*time.Millisecond))
	}
}

// armInstall unpacks a release tarball for emulation: the lean withlock
// and cron-gate in x/, next to scripts for their companions that run the
// real ARM companions (in y/) under qemu, logging each call to
// calls.log; and scripts for withlock and cron-gate themselves in w/ for
// PATH. It returns x/ and w/.
func armInstall(t *testing.T, qemu, tarball string) (x, w, calls string) {
	var y string
	d := t.TempDir()
	run(t, "", nil, "tar", "-C", d, "--strip-components=1", "-xzf", tarball)
	x, y, w = filepath.Join(d, "x"), filepath.Join(d, "y"), filepath.Join(d, "w")
	calls = filepath.Join(d, "calls.log")
	for _, dir := range []string{x, y, w} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range binaries {
		src := filepath.Join(d, "bin", b)
		if b == "withlock" || b == "cron-gate" {
			if err := os.Rename(src, filepath.Join(x, b)); err != nil {
				t.Fatal(err)
			}
			qemuWrapper(t, filepath.Join(w, b), qemu, filepath.Join(x, b))
			continue
		}
		if err := os.Rename(src, filepath.Join(y, b)); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(x, b), fmt.Sprintf("#!/bin/sh\necho %s >>%s\nexec %s -0 \"$0\" %s \"$@\"\n", b, calls, qemu, filepath.Join(y, b)), 0o755)
	}
	return x, w, calls
}

func smoke(t *testing.T, qemu, tarball, name string) {
	x, w, calls := armInstall(t, qemu, tarball)
	d := t.TempDir()
	cache := filepath.Join(d, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(d, "config.toml")
	write(t, cfg, fmt.Sprintf("state_dir = %q\n\n[gates.g]\ninterval = \"10m\"\n\n[gates.held]\npaused = true\nreason = \"smoke\"\n", filepath.Join(d, "state")), 0o644)
	env := []string{"PATH=" + w + ":/usr/bin:/bin", "HOME=" + d, "CRON_GATE_CACHE_DIR=" + cache, "LANG=C.UTF-8"}
	sh := func(want int, line string) string {
		t.Helper()
		code, out := exitCode(t, d, env, "/bin/sh", "-c", line)
		if code != want {
			t.Fatalf("%s: %s: exit %d, want %d\n%s", name, line, code, want, out)
		}
		return out
	}
	lock := "withlock --lock-dir " + d + "/locks --paths " + d + "/post.md"
	sh(0, lock+" -- true")
	// A skip is silent off a terminal (cron mails nothing); -v says why.
	if out := sh(75, lock+" -- "+strings.Replace(lock, "withlock ", "withlock -v ", 1)+" -- true"); !strings.Contains(out, "busy") {
		t.Errorf("%s: a busy lock: %q", name, out)
	}
	if out := sh(0, "withlock --help"); !strings.Contains(out, "Usage: withlock") {
		t.Errorf("%s: withlock --help (kong, in withlock itself): %q", name, out)
	}
	for _, b := range binaries {
		prog := "withlock"
		if strings.HasPrefix(b, "cron-gate") {
			prog = "cron-gate"
		}
		if b == "withlock-etcd" {
			prog = b
		}
		// x/withlock and x/cron-gate are the ARM binaries themselves;
		// the companions in x/ are scripts that start qemu.
		cmd := filepath.Join(x, b)
		if b == "withlock" || b == "cron-gate" {
			cmd = qemu + " " + cmd
		}
		if out := sh(0, cmd+" --version"); !versionLine(t, prog).MatchString(out) {
			t.Errorf("%s: %s --version: %q, want %s", name, b, out, versionLine(t, prog))
		}
	}
	run1 := "cron-gate --config " + cfg + " g -- " + lock + " -- true"
	os.Remove(calls)
	sh(0, run1) // decoded (kong, TOML) by cron-gate itself, which fills the cache
	if ents, _ := os.ReadDir(cache); len(ents) == 0 {
		t.Errorf("%s: the first run of a gate left no config cache entry in %s", name, cache)
	}
	sh(0, run1) // from the cache
	if out := sh(0, "cron-gate --help"); !strings.Contains(out, "Usage: cron-gate") {
		t.Errorf("%s: cron-gate --help (kong, in cron-gate itself): %q", name, out)
	}
	b, _ := os.ReadFile(calls)
	if len(b) != 0 {
		t.Errorf("%s: companions run for a config without [etcd]: %q; want none (one file per tool)", name, b)
	}
	sh(1, "cron-gate --config "+cfg+" g -- sh -c 'exit 1'")
	if out := sh(75, "cron-gate -v --config "+cfg+" held -- true"); !strings.Contains(out, "paused") {
		t.Errorf("%s: a paused gate: %q", name, out)
	}
	var st struct {
		Gates []struct {
			Name      string         `json:"name"`
			Runs      int            `json:"runs"`
			Successes int            `json:"successes"`
			Failures  int            `json:"failures"`
			Skips     map[string]int `json:"skips"`
		} `json:"gates"`
	}
	out := sh(0, "cron-gate --config "+cfg+" status --json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%s: status --json: %v\n%s", name, err, out)
	}
	got := map[string]string{}
	for _, g := range st.Gates {
		skips := 0
		for _, n := range g.Skips {
			skips += n
		}
		got[g.Name] = fmt.Sprintf("%d successes, %d failures, %d skips", g.Successes, g.Failures, skips)
	}
	if want := map[string]string{"g": "2 successes, 1 failures, 0 skips", "held": "0 successes, 0 failures, 1 skips"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: status: %v, want %v", name, got, want)
	}
	j, err := os.ReadFile(filepath.Join(d, "state/gates/g/journal.jsonl"))
	if err != nil || strings.Count(string(j), `"event":"end"`) != 3 {
		t.Errorf("%s: journal of g: %v\n%s", name, err, j)
	}
	fmt.Printf("ARM %s smoke: lock, busy 75, a run decoded and one from the cache, help, no companion, paused 75, journal, status: ok\n", name)
}

// ratioRounds is how many interleaved rounds callRatios times: 20, a
// figure for CI's log (on a slow machine the emulated rounds took a
// minute of the package stage); ARM_RATIO_ROUNDS sets more (60 for the
// figures in docs/install.md).
var ratioRounds = func() int {
	if n, err := strconv.Atoi(os.Getenv("ARM_RATIO_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 20
}()

// callRatios times a call of withlock and of a cached cron-gate run
// against the anchor (tests/bench/anchor, the bare Go os/exec runner),
// all built for goarch and run under qemu ("" for native), interleaved
// so that drifting load cancels out; it returns the two medians' ratios
// to the anchor's. Nothing is asserted: it is a figure for the report.
func callRatios(t *testing.T, qemu, tarball, goarch, goarm string) [2]float64 {
	d := t.TempDir()
	run(t, "", nil, "tar", "-C", d, "--strip-components=1", "-xzf", tarball)
	anchor := filepath.Join(d, "anchor")
	run(t, root, append(os.Environ(), "GOARCH="+goarch, "GOARM="+goarm, "CGO_ENABLED=0"), "go", "build", "-trimpath", "-o", anchor, "./tests/bench/anchor")
	cache := filepath.Join(d, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(d, "config.toml")
	write(t, cfg, fmt.Sprintf("state_dir = %q\n[gates.g]\ninterval = \"10m\"\n", filepath.Join(d, "state")), 0o644)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + d, "CRON_GATE_CACHE_DIR=" + cache}
	x := filepath.Join(d, "bin")
	cmds := [][]string{
		{anchor, "true"},
		{filepath.Join(x, "withlock"), "--lock-dir", filepath.Join(d, "locks"), "--paths", d + "/a," + d + "/b", "--slots", "4", "--", "true"},
		{filepath.Join(x, "cron-gate"), "--config", cfg, "g", "--", "true"},
	}
	if qemu != "" {
		for i := range cmds {
			cmds[i] = append([]string{qemu}, cmds[i]...)
		}
	}
	for _, c := range cmds { // warm up: fill the cache, the page cache
		if code, out := exitCode(t, d, env, c[0], c[1:]...); code != 0 {
			t.Fatalf("%q: exit %d\n%s", c, code, out)
		}
	}
	times := make([][]time.Duration, len(cmds))
	for range ratioRounds {
		for i, c := range cmds {
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Env, cmd.Dir = env, d
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%q: %v", c, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	med := func(ts []time.Duration) float64 {
		slices.Sort(ts)
		return float64(ts[len(ts)/2])
	}
	return [2]float64{med(times[1]) / med(times[0]), med(times[2]) / med(times[0])}
}
