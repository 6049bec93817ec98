package fault

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chainRoot prepares a directory for cron-gate + withlock chains: config,
// state, cache and lock dir inside it, and a marker in the environment
// that finds every process the test started.
func chainRoot(t *testing.T) (root string, env []string) {
	t.Helper()
	root = realTempDir(t)
	config := fmt.Sprintf("state_dir = %q\n", filepath.Join(root, "state"))
	if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(gateEnv(root), "FAULT_RUN="+root, "WITHLOCK_LOCK_DIR="+filepath.Join(root, "locks"))
	killLeftovers(t, "FAULT_RUN="+root)
	return root, env
}

// killLeftovers makes sure that nothing a test started outlives it, even
// when it fails half-way: at the end of the test, every process carrying
// marker in its environment is killed.
func killLeftovers(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, l := range waitNoProcs(marker, time.Now()) {
			var pid int
			fmt.Sscanf(l, "pid %d", &pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// waitFile polls until name exists; it fails if p ends first or the
// deadline passes.
func waitFile(t *testing.T, p *proc, name string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if p != nil && p.exited() {
			t.Fatalf("%v ended (%v) before %s appeared; stderr: %s", p.cmd.Args, p.res, name, p.stderr())
		}
		if time.Now().After(end) {
			t.Fatalf("%s did not appear within %v", name, deadline)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lastRecord returns the last record of a gate's journal.
func lastRecord(t *testing.T, root, gate string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "state", "gates", gate, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("last journal line %q: %v", lines[len(lines)-1], err)
	}
	return rec
}

// TestSignalChain sends TERM, INT, HUP and QUIT to cron-gate at the head of
// "cron-gate G -- withlock --paths a -- sh": cron-gate forwards it to
// withlock's process group, withlock forwards it to the shell's, the
// shell's trap decides the exit code, and that code comes back through both
// wrappers and into the journal. Afterwards the lock is free and no process
// is left.
func TestSignalChain(t *testing.T) {
	full(t)
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		name := strings.TrimPrefix(sigName(sig), "SIG")
		t.Run(name, func(t *testing.T) {
			root, env := chainRoot(t)
			code := 7 + i
			started := filepath.Join(root, "started")
			script := fmt.Sprintf(`ulimit -c 0; trap 'echo got %s > %s/got; exit %d' %s; touch %s; while :; do sleep 0.02; done`,
				name, root, code, name, started)
			p := start(t, env, bin("cron-gate"), "g", "--", bin("withlock"), "--paths", filepath.Join(root, "a"), "--", "sh", "-c", script)
			waitFile(t, p, started)
			if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			if res := p.wait(t); res != (result{code: code}) {
				t.Fatalf("cron-gate: %v, want exit %d; stderr: %s", res, code, p.stderr())
			}
			if got, _ := os.ReadFile(filepath.Join(root, "got")); string(got) != "got "+name+"\n" {
				t.Errorf("the command's trap did not run: %q", got)
			}
			if strings.Contains(p.stderr(), "goroutine") {
				t.Errorf("a wrapper dumped goroutines on %s: %s", name, p.stderr())
			}
			rec := lastRecord(t, root, "g")
			if rec["event"] != "end" || rec["exit"] != float64(code) || rec["outcome"] != "failure" {
				t.Errorf("journal end record: %v, want event end, exit %d, outcome failure", rec, code)
			}
			if left := waitNoProcs("FAULT_RUN="+root, time.Now().Add(deadline)); len(left) > 0 {
				t.Fatalf("left running: %v", left)
			}
			if res, _, e := run(t, env, bin("withlock"), "--paths", filepath.Join(root, "a"), "--", "true"); res != (result{}) {
				t.Fatalf("lock not free afterwards: %v %s", res, e)
			}
		})
	}

	// A command without a trap dies of the forwarded TERM: withlock exits
	// 143 (128+15), and cron-gate passes that on and journals it as the
	// exit code of its command (withlock), i.e. a failure with exit 143.
	t.Run("TERM-untrapped", func(t *testing.T) {
		root, env := chainRoot(t)
		started := filepath.Join(root, "started")
		p := start(t, env, bin("cron-gate"), "g", "--", bin("withlock"), "--paths", filepath.Join(root, "a"), "--",
			"sh", "-c", "touch "+started+"; exec sleep 3000")
		waitFile(t, p, started)
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
		if res := p.wait(t); res != (result{code: 143}) {
			t.Fatalf("cron-gate: %v, want exit 143; stderr: %s", res, p.stderr())
		}
		if rec := lastRecord(t, root, "g"); rec["exit"] != float64(143) {
			t.Errorf("journal end record: %v, want exit 143", rec)
		}
		if left := waitNoProcs("FAULT_RUN="+root, time.Now().Add(deadline)); len(left) > 0 {
			t.Fatalf("left running: %v", left)
		}
	})

	// TERM while withlock waits (--wait) inside the chain: the wait ends,
	// the command never starts, withlock exits 143 and cron-gate too.
	t.Run("TERM-during-wait", func(t *testing.T) {
		root, env := chainRoot(t)
		a := filepath.Join(root, "a")
		held := filepath.Join(root, "held")
		h := start(t, env, bin("withlock"), "--paths", a, "--", "sh", "-c", "touch "+held+"; exec sleep 3000")
		waitFile(t, h, held)
		p := start(t, env, bin("cron-gate"), "g", "--", bin("withlock"), "--wait", "60s", "--paths", a, "--",
			"touch", filepath.Join(root, "ran"))
		// Wait until the waiter has opened the lock file (its first attempt).
		waitOpen(t, p, filepath.Join(root, "locks"))
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
		if res := p.wait(t); res != (result{code: 143}) {
			t.Fatalf("cron-gate: %v, want exit 143; stderr: %s", res, p.stderr())
		}
		if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
			t.Errorf("the command ran although the wait was ended by TERM")
		}
		syscall.Kill(h.cmd.Process.Pid, syscall.SIGTERM)
		h.wait(t)
	})

	// SIGKILL of cron-gate does not stop its chain: withlock and the
	// command run on and keep the lock; when they end the lock is free, and
	// status reports the run as vanished, not running.
	t.Run("KILL-cron-gate", func(t *testing.T) {
		root, env := chainRoot(t)
		a := filepath.Join(root, "a")
		started, release := filepath.Join(root, "started"), filepath.Join(root, "release")
		p := start(t, env, bin("cron-gate"), "g", "--", bin("withlock"), "--paths", a, "--",
			"sh", "-c", fmt.Sprintf("touch %s; while [ ! -e %s ]; do sleep 0.01; done", started, release))
		waitFile(t, p, started)
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		if res := p.wait(t); res.sig != syscall.SIGKILL {
			t.Fatalf("cron-gate: %v, want killed", res)
		}
		if res, _, _ := run(t, env, bin("withlock"), "--paths", a, "--", "true"); res != (result{code: 75}) {
			t.Fatalf("the lock was not held by the orphaned chain: %v", res)
		}
		_, out, _ := run(t, env, bin("cron-gate"), "status", "--json")
		if !strings.Contains(out, `"state": "running"`) {
			t.Errorf("status while the orphaned command runs: want running, got %s", out)
		}
		os.WriteFile(release, nil, 0o644)
		if left := waitNoProcs("FAULT_RUN="+root, time.Now().Add(deadline)); len(left) > 0 {
			t.Fatalf("left running: %v", left)
		}
		if res, _, e := run(t, env, bin("withlock"), "--paths", a, "--", "true"); res != (result{}) {
			t.Fatalf("lock not free afterwards: %v %s", res, e)
		}
		_, out, _ = run(t, env, bin("cron-gate"), "status", "--json")
		if !strings.Contains(out, `"outcome": "vanished"`) || strings.Contains(out, `"state": "running"`) {
			t.Errorf("status after the orphans ended: want a vanished run and nothing running, got %s", out)
		}
	})
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT"}[s]
}

// waitOpen polls until one of p's descendants has a file under dir open.
func waitOpen(t *testing.T, p *proc, dir string) {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if p.exited() {
			t.Fatalf("%v ended (%v) early; stderr: %s", p.cmd.Args, p.res, p.stderr())
		}
		pids := []int{p.cmd.Process.Pid}
		for i := 0; i < len(pids); i++ {
			pids = append(pids, childrenOf(pids[i])...)
			fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pids[i]))
			for _, fd := range fds {
				if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, dir+"/") {
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("nothing under %s was opened within %v", dir, deadline)
}
