package fault

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTempsAfterKill SIGKILLs the writers of every atomically replaced
// file at random moments — cron-gate pause and resume (pauses.json),
// cron-gate runs of a gate whose summary.json is rewritten at every
// rotation (history 10), cron-gate check (check.json), and runs after a
// config edit (a config-cache entry, written when cron-gate decodes the config) — and then
// makes one more normal write of each. No temporary file may remain: a
// writer killed between naming its temp and renaming it leaves one, which
// the next write of the same file removes (package statefile). Before
// that, every such kill left a .pauses.json.tmp-* or .summary.json.tmp-*
// for ever. FAULT_TEMPS_ITERATIONS (default 240) sets the number of kills;
// FAULT_SEED as for TestKillRandom.
func TestTempsAfterKill(t *testing.T) {
	full(t)
	iters := envInt(t, "FAULT_TEMPS_ITERATIONS", 240)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULT_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	root := realTempDir(t)
	state, cache := filepath.Join(root, "state"), filepath.Join(root, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := "FAULT_RUN=" + root
	killLeftovers(t, marker)
	env := append(gateEnv(root), marker)
	config := func(edit int) {
		c := fmt.Sprintf("state_dir = %q\n# edit %d\n[gates.g]\nhistory = 10\n", state, edit)
		if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config(0)
	writers := []struct {
		name string
		argv func(i int) []string
	}{
		{"pause", func(i int) []string {
			return []string{bin("cron-gate"), "pause", fmt.Sprintf("p%d", i%7), "--for", "1h"}
		}},
		{"resume", func(i int) []string { return []string{bin("cron-gate"), "resume", fmt.Sprintf("p%d", i%7)} }},
		{"run", func(int) []string { return []string{bin("cron-gate"), "g", "--", "true"} }},
		{"check", func(int) []string { return []string{bin("cron-gate"), "check"} }},
		{"cache", func(i int) []string { config(i); return []string{bin("cron-gate"), "g", "--", "true"} }},
	}
	// Every kind writes once unhindered first, so that each file exists.
	for i, w := range writers {
		if res, _, e := run(t, env, w.argv(i)...); res.sig != 0 || res.err != nil {
			t.Fatalf("%s: %v %s", w.name, res, e)
		}
	}
	killed := map[string]int{}
	for i := 0; i < iters; i++ {
		w := writers[rng.IntN(len(writers))]
		p := start(t, env, w.argv(i)...)
		time.Sleep(time.Duration(rng.IntN(12000)) * time.Microsecond)
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGKILL)
			killed[w.name]++
		}
		if res := p.wait(t); res.sig != 0 && res.sig != syscall.SIGKILL || strings.Contains(p.stderr(), "panic") {
			t.Fatalf("%s: %v %s", w.name, res, p.stderr())
		}
	}
	if left := waitNoProcs(marker, time.Now().Add(deadline)); len(left) > 0 {
		t.Fatalf("left running: %v", left)
	}
	temps := func() []string {
		var out []string
		for _, pat := range []string{"state/.*.tmp-*", "state/gates/*/.*.tmp-*", "cache/.*.tmp-*"} {
			m, _ := filepath.Glob(filepath.Join(root, pat))
			out = append(out, m...)
		}
		return out
	}
	t.Logf("killed %v; temporary files left by the kills: %d", killed, len(temps()))

	// One more normal write of each file.
	for _, argv := range [][]string{
		{bin("cron-gate"), "pause", "p0", "--for", "1h"},
		{bin("cron-gate"), "check"},
	} {
		if res, _, e := run(t, env, argv...); res.sig != 0 {
			t.Fatalf("%v: %v %s", argv, res, e)
		}
	}
	config(iters + 1) // a new cache entry
	summary := filepath.Join(state, "gates", "g", "summary.json")
	before, _ := os.Stat(summary)
	for n := 0; ; n++ {
		if res, _, e := run(t, env, bin("cron-gate"), "g", "--", "true"); res != (result{}) {
			t.Fatalf("run: %v %s", res, e)
		}
		// Until summary.json has been replaced (at the latest at the
		// next rotation, within 10 runs).
		if after, err := os.Stat(summary); err == nil && (before == nil || !os.SameFile(before, after)) {
			break
		}
		if n > 20 {
			t.Fatal("summary.json was not rewritten in 20 runs of a gate with history = 10")
		}
	}
	if left := temps(); len(left) > 0 {
		t.Errorf("temporary files left after one more normal write of each file: %v", left)
	}
}
