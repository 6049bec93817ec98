package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKillRandom SIGKILLs withlock, cron-gate and the command at random
// moments, over many iterations with a seeded RNG. Each iteration starts a
// few chains at once on overlapping paths and one shared pool of 3 slots, some with --wait:
// plain "withlock ... -- faultworker" and "cron-gate G -- withlock ... --
// faultworker". For some chains it picks a victim (the outer process,
// withlock inside cron-gate, or the command) and a random delay, and kills
// it with SIGKILL. Then it waits (with a deadline) until every process of
// the iteration — orphans included — has exited, and requires that:
//
//   - no two live processes were ever inside the same critical section
//     (faultworker's owner-stamped markers) and no slot index was over the
//     pool's cap;
//   - every chain that was not hit exited 0 or 75, and every chain that
//     was hit exited 0, 75, 137 or died of SIGKILL itself: nothing else;
//   - every lock is free: one withlock over all the paths and the pool
//     succeeds at once;
//   - afterwards, cron-gate status reads every journal (a record torn by
//     a kill is skipped and reported, never a failure), and no gate is
//     left "running".
//
// FAULT_ITERATIONS (default 120) and FAULT_SEED (default: the clock; the
// seed is logged) control it.
func TestKillRandom(t *testing.T) {
	full(t)
	iters := envInt(t, "FAULT_ITERATIONS", 120)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FAULT_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (FAULT_SEED=%d replays the same choices; timing still varies)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	root := realTempDir(t)
	dirs := mkdirs(t, root, "locks", "mark", "posts", "pids", "state")
	lockDir, mark, posts, pids := dirs[0], dirs[1], dirs[2], dirs[3]
	if err := os.Symlink("posts", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("state_dir = %q\n\n[gates.g-short]\nhistory = 10\n", filepath.Join(root, "state"))
	if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	const nposts, nslots = 6, 3
	var canon []string
	for i := 0; i < nposts; i++ {
		canon = append(canon, filepath.Join(posts, fmt.Sprintf("p%d.md", i)))
		// faultworker keys its markers on the post file it opens.
		if err := os.WriteFile(canon[i], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slotTmpl := filepath.Join(root, "slot-{i}.lock")
	marker := "FAULT_RUN=" + root
	killLeftovers(t, marker)
	env := append(gateEnv(root), marker)
	gates := []string{"g-a", "g-b", "g-short"}

	type member struct {
		p       *proc
		chain   bool
		victim  string // "", "outer", "withlock", "command"
		pidfile string
	}
	counts := map[string]int{}
	var cmu sync.Mutex
	count := func(k string) { cmu.Lock(); counts[k]++; cmu.Unlock() }

	for it := 0; it < iters && !t.Failed(); it++ {
		n := 3 + rng.IntN(3)
		members := make([]*member, n)
		var kills sync.WaitGroup
		for j := range members {
			k := 1 + rng.IntN(3)
			var set []string
			for _, i := range rng.Perm(nposts)[:k] {
				if rng.IntN(2) == 0 {
					set = append(set, filepath.Join(root, "alias", ".", fmt.Sprintf("p%d.md", i)))
				} else {
					set = append(set, canon[i])
				}
			}
			m := &member{chain: rng.IntN(2) == 0, pidfile: filepath.Join(pids, fmt.Sprintf("%d-%d", it, j))}
			argv := []string{bin("withlock"), "-q", "--lock-dir", lockDir, "--paths", strings.Join(set, ",")}
			if rng.IntN(5) < 2 {
				// A waiter: killed while it waits, or while it watches
				// a holder being killed.
				argv = append(argv, "--wait", "300ms")
			}
			argv = append(argv, "--slots", strconv.Itoa(nslots), "--slot-file", slotTmpl, "--", bin("faultworker"), mark, "20", "main:"+strconv.Itoa(nslots), "--")
			argv = append(argv, set...)
			if m.chain {
				argv = append([]string{bin("cron-gate"), "-q", gates[rng.IntN(len(gates))], "--"}, argv...)
			}
			switch r := rng.IntN(8); {
			case r < 2:
				m.victim = "outer"
			case r < 3 && m.chain:
				m.victim = "withlock"
			case r < 5:
				m.victim = "command"
			}
			delay := time.Duration(rng.IntN(40_000)) * time.Microsecond
			m.p = start(t, append(env, "FAULT_PIDFILE="+m.pidfile), argv...)
			members[j] = m
			if m.victim == "" {
				continue
			}
			kills.Add(1)
			go func() {
				defer kills.Done()
				killLater(m.p, m.victim, m.pidfile, delay, count)
			}()
		}
		kills.Wait()
		for _, m := range members {
			res := m.p.wait(t)
			what := "withlock"
			if m.chain {
				what = "chain"
			}
			count(fmt.Sprintf("%s victim=%s -> %v", what, orNone(m.victim), res))
			ok := res.err == nil && res.sig == 0 && (res.code == 0 || res.code == 75)
			if m.victim != "" {
				ok = ok || res.err == nil && (res.sig == syscall.SIGKILL && m.victim == "outer" || res.sig == 0 && res.code == 137)
			}
			if !ok {
				t.Errorf("iteration %d: %v (victim %s): %v; stderr: %s", it, m.p.cmd.Args, orNone(m.victim), res, m.p.stderr())
			}
			if res.sig == 0 && (res.code == 0 || res.code == 75) && len(m.p.stderr()) > 0 {
				t.Errorf("iteration %d: %v: unexpected stderr: %s", it, m.p.cmd.Args, m.p.stderr())
			}
		}
		// Every process of the iteration, orphans included, must exit.
		if left := waitNoProcs(marker, time.Now().Add(deadline)); len(left) > 0 {
			t.Fatalf("iteration %d: processes still running %v after every chain ended: %v", it, deadline, left)
		}
		// Then every lock must be free.
		res, _, errOut := run(t, nil, bin("withlock"), "--lock-dir", lockDir, "--paths", strings.Join(canon, ","),
			"--slots", strconv.Itoa(nslots), "--slot-file", slotTmpl, "--", "true")
		if res != (result{}) {
			t.Fatalf("iteration %d: locks not free once everything exited: %v %s", it, res, errOut)
		}
	}

	if v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS")); len(v) > 0 {
		t.Fatalf("mutual exclusion violated:\n%s", v)
	}
	cs, _ := os.ReadFile(filepath.Join(mark, "COUNT"))
	t.Logf("iterations %d; critical sections checked: %d", iters, bytes.Count(cs, []byte("e")))
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		t.Logf("  %5d  %s", counts[k], k)
	}
	if bytes.Count(cs, []byte("e")) == 0 {
		t.Fatal("no critical section ran")
	}

	// The journals survived the kills: status reads them all, and no run
	// is left "running" once every process is gone.
	res, out, errOut := run(t, env, bin("cron-gate"), "status", "--json")
	if res != (result{}) {
		t.Fatalf("cron-gate status --json: %v %s", res, errOut)
	}
	var rep struct {
		Gates []struct {
			Name         string
			State        string
			JournalError string `json:"journal_error"`
			Runs         int64
			Failures     int64
			Skips        map[string]int64
			Running      []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	for _, g := range rep.Gates {
		t.Logf("gate %s: state %s, runs %d (failures %d), skips %v, journal_error %q", g.Name, g.State, g.Runs, g.Failures, g.Skips, g.JournalError)
		if g.State == "running" || len(g.Running) > 0 {
			t.Errorf("gate %s still shows a running run after every process exited: %s", g.Name, out)
		}
	}
	if res, out, errOut := run(t, env, bin("cron-gate"), "status"); res != (result{}) || strings.Contains(out+errOut, "panic") {
		t.Errorf("cron-gate status: %v\n%s%s", res, out, errOut)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// killLater SIGKILLs the chosen victim of p after delay: the outer process
// itself; the withlock that cron-gate started (found among its children);
// or the command (found through its pidfile, which it writes first thing;
// half the delay then counts from that moment). It gives up when p has
// ended before the victim could be found.
func killLater(p *proc, victim, pidfile string, delay time.Duration, count func(string)) {
	switch victim {
	case "outer":
		time.Sleep(delay)
		if p.cmd.Process.Signal(syscall.SIGKILL) == nil {
			count("kill sent: outer")
		}
	case "withlock":
		time.Sleep(delay)
		for !p.exited() {
			if kids := childrenOf(p.cmd.Process.Pid); len(kids) > 0 {
				if syscall.Kill(kids[0], syscall.SIGKILL) == nil {
					count("kill sent: withlock under cron-gate")
				}
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	case "command":
		for !p.exited() {
			if pid, ticks, ok := readPidfile(pidfile); ok {
				time.Sleep(delay / 2)
				if running(pid, ticks) && syscall.Kill(pid, syscall.SIGKILL) == nil {
					count("kill sent: command")
				}
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// waitNoProcs polls until no process carries marker in its environment
// (every process a test started, and every process they started, orphans
// of a killed parent included) and returns those still running at until.
func waitNoProcs(marker string, until time.Time) []string {
	needle := append([]byte(marker), 0)
	self := os.Getpid()
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || !running(pid, 0) {
				continue
			}
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil || !bytes.Contains(append([]byte{0}, data...), append([]byte{0}, needle...)) {
				continue
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left = append(left, fmt.Sprintf("pid %d %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
		if len(left) == 0 || time.Now().After(until) {
			return left
		}
		time.Sleep(2 * time.Millisecond)
	}
}
