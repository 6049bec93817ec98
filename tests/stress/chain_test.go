package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/testbin"
)

// TestStressChains is TestStressExclusion's scheme with cron-gate in front
// of withlock, as a crontab line would run it: two Python processes on the
// seed's rule, two goroutines of plain "withlock ... -- csworker", and
// three goroutines of "cron-gate G -- withlock ... -- csworker", all on
// random overlapping sets of 10 paths (some through a symlinked alias) and
// one shared pool of 3 slots. Two of the chain goroutines share one gate,
// whose history is 10 so that its journal rotates all the time under
// concurrent appends.
//
// The O_EXCL markers of tests/csworker and tests/pyrule/stress_worker.py
// prove that no path and no slot ever had two holders; a sampler counts the
// slot markers present at once and checks that none is over the cap. The
// journals are checked too: the status counts of every gate equal what the
// chains' exit codes say (0 a success, 75 a busy skip), and nothing is left
// running.
//
// STRESS_SECONDS sets the duration (default 15).
func TestStressChains(t *testing.T) {
	full(t)
	needPython(t)
	bin, err := testbin.Dir()
	if err != nil {
		t.Fatal(err)
	}
	secs := 15.0
	if s := os.Getenv("STRESS_SECONDS"); s != "" {
		if secs, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lockDir, mark, posts, state := filepath.Join(root, "locks"), filepath.Join(root, "mark"), filepath.Join(root, "posts"), filepath.Join(root, "state")
	for _, d := range []string{lockDir, mark, posts} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("posts", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("state_dir = %q\n\n[gates.shared]\nhistory = 10\n", state)
	if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	gateEnv := append(os.Environ(), "CRON_GATE_CONFIG="+filepath.Join(root, "config.toml"),
		"CRON_GATE_STATE_DIR="+state, "CRON_GATE_CACHE_DIR="+filepath.Join(root, "cache"))

	const nposts, nslots = 10, 3
	var canon, aliased []string
	for i := 0; i < nposts; i++ {
		canon = append(canon, filepath.Join(posts, fmt.Sprintf("post-%d.md", i)))
		aliased = append(aliased, filepath.Join(root, "alias", ".", fmt.Sprintf("post-%d.md", i)))
		// The workers key their markers on the post file they open.
		if err := os.WriteFile(canon[i], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slotTmpl := filepath.Join(root, "slot-{i}.lock")

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs*float64(time.Second)))
	defer cancel()

	// The pool sampler: how many slot markers exist at once, and whether
	// any names a slot over the cap.
	var maxSlots, samples atomic.Int64
	var overCap atomic.Value
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			ents, _ := os.ReadDir(mark)
			n := int64(0)
			for _, e := range ents {
				if idx, ok := strings.CutPrefix(e.Name(), "pool-main-"); ok {
					n++
					if i, err := strconv.Atoi(idx); err != nil || i >= nslots {
						overCap.Store(e.Name())
					}
				}
			}
			if n > maxSlots.Load() {
				maxSlots.Store(n)
			}
			samples.Add(1)
			time.Sleep(500 * time.Microsecond)
		}
	}()

	py := filepath.Join(testbin.Module(), "tests", "pyrule", "stress_worker.py")
	var pys []*exec.Cmd
	for i := 0; i < 2; i++ {
		args := append([]string{py, mark, lockDir, fmt.Sprint(secs), slotTmpl, fmt.Sprint(nslots), "main"}, canon...)
		c := exec.Command("python3", args...)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		pys = append(pys, c)
	}

	var mu sync.Mutex
	var failures []string
	plainRan, plainSkipped := 0, 0
	type tally struct{ ok, busy int64 }
	perGate := map[string]*tally{}
	var wg sync.WaitGroup
	worker := func(gate string) {
		defer wg.Done()
		for ctx.Err() == nil {
			var set []string
			for _, i := range rand.Perm(nposts)[:1+rand.IntN(3)] {
				if rand.IntN(2) == 0 {
					set = append(set, aliased[i])
				} else {
					set = append(set, canon[i])
				}
			}
			argv := []string{filepath.Join(bin, "withlock"), "-q", "--lock-dir", lockDir,
				"--paths", strings.Join(set, ","), "--slots", fmt.Sprint(nslots), "--slot-file", slotTmpl,
				"--", filepath.Join(bin, "csworker"), mark, "main", "--"}
			argv = append(argv, set...)
			if gate != "" {
				argv = append([]string{filepath.Join(bin, "cron-gate"), "-q", gate, "--"}, argv...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = gateEnv
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			mu.Lock()
			switch {
			case code != 0 && code != 75 || len(out) > 0:
				failures = append(failures, fmt.Sprintf("%s: exit %d: %s", argv[0], code, out))
			case gate == "" && code == 0:
				plainRan++
			case gate == "":
				plainSkipped++
			case code == 0:
				perGate[gate].ok++
			default:
				perGate[gate].busy++
			}
			mu.Unlock()
		}
	}
	for _, g := range []string{"", "", "chain-a", "shared", "shared"} {
		if g != "" && perGate[g] == nil {
			perGate[g] = &tally{}
		}
		wg.Add(1)
		go worker(g)
	}
	wg.Wait()
	for _, c := range pys {
		if err := c.Wait(); err != nil {
			t.Errorf("python stress worker: %v", err)
		}
	}
	<-sampled
	for _, f := range failures {
		t.Error(f)
	}
	if v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS")); len(v) > 0 {
		t.Fatalf("mutual exclusion violated:\n%s", v)
	}
	if n := overCap.Load(); n != nil {
		t.Fatalf("a slot marker over the cap of %d was seen: %v", nslots, n)
	}
	if m := maxSlots.Load(); m > nslots {
		t.Fatalf("%d slot markers at once, cap %d", m, nslots)
	}
	count, _ := os.ReadFile(filepath.Join(mark, "COUNT"))
	goCS := strings.Count(string(count), "w")
	pyCS := strings.Count(string(count), "p")
	chainOK, chainBusy := int64(0), int64(0)
	for _, g := range perGate {
		chainOK += g.ok
		chainBusy += g.busy
	}
	t.Logf("critical sections checked: %d (withlock %d, of which under cron-gate %d; python %d); skipped busy: withlock %d, chains %d; pool sampled %d times, at most %d of %d slots at once",
		goCS+pyCS, goCS, chainOK, pyCS, plainSkipped, chainBusy, samples.Load(), maxSlots.Load(), nslots)
	if int64(goCS) != int64(plainRan)+chainOK || chainOK == 0 || plainRan == 0 || pyCS == 0 {
		t.Fatalf("too little contention to prove anything, or a lost section: csworker %d, withlock ran %d, chains ran %d, python %d",
			goCS, plainRan, chainOK, pyCS)
	}

	// The journals agree with the exit codes, rotation and concurrent
	// appends notwithstanding.
	out, err := exec.Command(filepath.Join(bin, "cron-gate"), "--config", filepath.Join(root, "config.toml"), "status", "--json").Output()
	if err != nil {
		t.Fatalf("status --json: %v", err)
	}
	var rep struct {
		Gates []struct {
			Name         string
			State        string
			Successes    int64
			Skips        map[string]int64
			Running      []json.RawMessage
			JournalError string `json:"journal_error"`
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, g := range rep.Gates {
		want := perGate[g.Name]
		if want == nil {
			t.Errorf("unexpected gate %s", g.Name)
			continue
		}
		if g.Successes != want.ok || g.Skips["busy"] != want.busy || len(g.Running) > 0 || g.JournalError != "" {
			t.Errorf("gate %s: status says %d successes, %d busy skips, %d running, journal error %q; the chains exited 0 %d times and 75 %d times",
				g.Name, g.Successes, g.Skips["busy"], len(g.Running), g.JournalError, want.ok, want.busy)
		}
	}
	left, _ := os.ReadDir(mark)
	for _, e := range left {
		if e.Name() != "COUNT" {
			t.Errorf("marker left behind: %s", e.Name())
		}
	}
	all := exec.Command(filepath.Join(bin, "withlock"), "--lock-dir", lockDir, "--paths", strings.Join(canon, ","),
		"--slots", fmt.Sprint(nslots), "--slot-file", slotTmpl, "--", "true")
	if out, err := all.CombinedOutput(); err != nil {
		t.Fatalf("locks not all free after the run: %v %s", err, out)
	}
}
