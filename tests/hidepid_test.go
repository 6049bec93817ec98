package tests

// TestHidepidHolderCommand (issue 32, item 7): with /proc mounted
// hidepid=2, a legacy lock's holder whose command line /proc hides from
// nobody (uid 65534) is shown to nobody by nothing of ours: not by the
// journal (0644) that a root run wrote, not by `status`, not by `why`, not
// by the loopback dashboard's /api/summary or /api/timeline. Root, whose /proc shows it,
// still sees it in `status`. Every command runs in a private mount
// namespace (unshare -m) with its own /proc mounted hidepid=2; the host's
// /proc is never changed.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hidepidPrefix runs a command in a private mount namespace whose /proc
// is a fresh proc mount with hidepid=2.
var hidepidPrefix = []string{"unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t proc -o hidepid=2 proc /proc && exec "$@"`, "sh"}

// asNobody runs a command as uid and gid 65534, without groups.
var asNobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}

func TestHidepidHolderCommand(t *testing.T) {
	need := func(ok bool, why string) {
		if ok {
			return
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("%s; CI must run this test", why)
		}
		t.Skip(why)
	}
	need(os.Geteuid() == 0, "needs root (to mount a private /proc and act as nobody)")
	for _, prog := range []string{"unshare", "setpriv", "python3", "mount"} {
		_, err := exec.LookPath(prog)
		need(err == nil, prog+" is not on PATH")
	}
	probe := exec.Command(hidepidPrefix[0], append(hidepidPrefix[1:], "true")...)
	out, err := probe.CombinedOutput()
	need(err == nil, "cannot mount a private /proc with hidepid=2 here: "+strings.TrimSpace(string(out)))

	// A directory nobody can traverse (t.TempDir's are private to root).
	dir, err := os.MkdirTemp("", "hidepid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	lock := filepath.Join(dir, "legacy.lock")
	if err := os.WriteFile(cfg, []byte("[gates.lk]\nlegacy_locks = [\""+lock+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRON_GATE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CRON_GATE_CONFIG="+cfg, "CRON_GATE_STATE_DIR="+filepath.Join(dir, "state"))
	rootEnv := append(append([]string{}, env...), "CRON_GATE_CACHE_DIR="+filepath.Join(dir, "cache"))
	cronGate := filepath.Join(binDir, "cron-gate")

	// run runs argv (behind hidepidPrefix) and returns stdout, stderr and
	// the exit code.
	run := func(nobody bool, argv ...string) (string, string, int) {
		t.Helper()
		full := append([]string{}, hidepidPrefix...)
		e := rootEnv
		if nobody {
			full, e = append(full, asNobody...), env
		}
		full = append(full, argv...)
		cmd := exec.Command(full[0], full[1:]...)
		cmd.Env, cmd.Dir = e, dir
		var o, er strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &er
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(serveDeadline):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%q: still running after %v", full, serveDeadline)
		}
		return o.String(), er.String(), cmd.ProcessState.ExitCode()
	}

	// The holder: a python3 process of root's, holding the legacy lock.
	pidFile := filepath.Join(dir, "py.pid")
	py := exec.Command("python3", "-c", `import fcntl, os, sys, time; f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2] + ".tmp", "w").write(str(os.getpid())); os.rename(sys.argv[2] + ".tmp", sys.argv[2]); time.sleep(3600)`, lock, pidFile)
	py.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-py.Process.Pid, syscall.SIGKILL); py.Wait() })
	deadline := time.Now().Add(serveDeadline)
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the python3 holder did not take the lock within %v", serveDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := strconv.Itoa(py.Process.Pid)

	// nobody's /proc hides the holder: the premise.
	if o, _, code := run(true, "cat", "/proc/"+pid+"/cmdline"); code == 0 {
		t.Fatalf("nobody reads the holder's command line through a hidepid=2 /proc: %q", o)
	}

	// A root run skips; its own stderr (root's, who may see it) names the
	// holder's command; the journal, which nobody may read, only its pid.
	_, stderr, code := run(false, cronGate, "-v", "lk", "--", "true")
	if code != 75 || !strings.Contains(stderr, "held by pid "+pid+" (") || !strings.Contains(stderr, "python") {
		t.Fatalf("root run with the legacy lock held: exit %d, stderr %q; want 75 naming pid %s (...python...)", code, stderr, pid)
	}

	noCommand := func(what, text string) {
		t.Helper()
		if strings.Contains(text, "python") {
			t.Errorf("%s shows nobody the command line that /proc hides from them:\n%s", what, text)
		}
	}
	journal, _, code := run(true, "cat", filepath.Join(dir, "state", "gates", "lk", "journal.jsonl"))
	if code != 0 || !strings.Contains(journal, "held by pid "+pid) {
		t.Fatalf("nobody reading the journal: exit %d, %q", code, journal)
	}
	noCommand("the journal", journal)

	o, stderr, code := run(true, cronGate, "status", "lk", "--json")
	if code != 0 || !strings.Contains(o, `"pid": `+pid) {
		t.Fatalf("status --json as nobody: exit %d, stderr %q, stdout:\n%s", code, stderr, o)
	}
	noCommand("status --json", o)
	o, _, _ = run(true, cronGate, "status", "lk")
	noCommand("status NAME", o)
	o, _, code = run(true, cronGate, "why", "lk")
	if code != 0 || !strings.Contains(o, "held by pid "+pid) {
		t.Fatalf("why as nobody: exit %d:\n%s", code, o)
	}
	noCommand("why", o)

	// Root in the same namespace sees it: the lookup is the reader's own.
	o, _, _ = run(false, cronGate, "status", "lk", "--json")
	if !strings.Contains(o, `"command": "`) || !strings.Contains(o, "python") {
		t.Errorf("status --json as root does not name the holder's command:\n%s", o)
	}

	// The dashboard, served by root: whoever connects is not root, so its
	// /api/summary names the holder's pid only.
	e := &serveEnv{dir: dir, config: cfg, env: rootEnv, wrap: hidepidPrefix}
	srv := e.startServe(t, "127.0.0.1:0")
	res, body := httpDo(t, "GET", srv.base+"/api/summary", nil, nil)
	if res.StatusCode != 200 {
		t.Fatalf("GET /api/summary: %d %s", res.StatusCode, body)
	}
	var sum struct {
		Gates []struct {
			Name     string `json:"name"`
			Skipping *struct {
				Locks []struct {
					Holders []struct {
						Pid int `json:"pid"`
					} `json:"holders"`
				} `json:"locks"`
			} `json:"skipping"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(body, &sum); err != nil || len(sum.Gates) != 1 || sum.Gates[0].Skipping == nil ||
		len(sum.Gates[0].Skipping.Locks) != 1 || len(sum.Gates[0].Skipping.Locks[0].Holders) != 1 ||
		strconv.Itoa(sum.Gates[0].Skipping.Locks[0].Holders[0].Pid) != pid {
		t.Fatalf("/api/summary does not name the holder pid %s (%v):\n%s", pid, err, body)
	}
	noCommand("/api/summary", string(body))
	// The timeline's skip names the holder recorded at skip time (the
	// root run's held_by): its pid, not its command.
	res, body = httpDo(t, "GET", srv.base+"/api/timeline", nil, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), `"pid":`+pid) {
		t.Fatalf("GET /api/timeline: %d, holder pid %s not named:\n%s", res.StatusCode, pid, body)
	}
	noCommand("/api/timeline", string(body))
	srv.stop(t)
}
