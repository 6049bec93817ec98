package tests

// TestJitterWaitingShows (issue 32, item 5): a run waiting out its jitter
// shows as waiting, with when its command starts, in `status` (table and
// --json), `why` and the dashboard's /api/summary, all through the real
// binaries; once a signal ends the wait, nothing shows it any more.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitingLine is cron-gate -v's line before a jitter's wait.
var waitingLine = regexp.MustCompile(`(?m)^cron-gate: gate (\S+): waiting (\S+) \(jitter 1h0m0s on host .*\) before starting the command$`)

// startWaiter starts `cron-gate -v --jitter 1h NAME -- touch MARKER` for
// the first of a few names whose offset on this host is at least a minute
// (an hour's jitter: all but every name), so that the wait outlasts the
// test's looking; it returns the name and the process, killed when the
// test ends.
func (e *serveEnv) startWaiter(t *testing.T, marker string) (string, *exec.Cmd) {
	t.Helper()
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("jw%d", i)
		errFile := filepath.Join(e.dir, name+".err")
		f, err := os.Create(errFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(binDir, "cron-gate"), "--config", e.config, "-v", "--jitter", "1h", name, "--", "touch", marker)
		cmd.Env, cmd.Dir, cmd.Stderr = e.env, e.dir, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		})
		var d time.Duration
		deadline := time.Now().Add(serveDeadline)
		for {
			data, _ := os.ReadFile(errFile)
			if m := waitingLine.FindSubmatch(data); m != nil {
				if d, err = time.ParseDuration(string(m[2])); err != nil {
					t.Fatalf("waiting line %q: %v", m[0], err)
				}
				break
			}
			select {
			case <-done:
				t.Fatalf("cron-gate --jitter 1h %s ended (%v) without saying it waits; stderr %q", name, cmd.ProcessState, data)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("cron-gate --jitter 1h %s: no waiting line within %v; stderr %q", name, serveDeadline, data)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d >= time.Minute {
			return name, cmd
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Fatal("no gate name jw0..jw9 has an offset of a minute or more on this host")
	return "", nil
}

// waitingGate is what this test reads of a gate in status --json and
// /api/summary.
type waitingGate struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Waiting []struct {
		Run   string    `json:"run"`
		Pid   int       `json:"pid"`
		Since time.Time `json:"since"`
		Until time.Time `json:"until"`
	} `json:"waiting"`
}

func findWaitingGate(t *testing.T, what string, data []byte, name string) waitingGate {
	t.Helper()
	var r struct {
		Gates []waitingGate `json:"gates"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, data)
	}
	for _, g := range r.Gates {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("%s: no gate %s\n%s", what, name, data)
	return waitingGate{}
}

func TestJitterWaitingShows(t *testing.T) {
	e := newServeEnv(t)
	marker := filepath.Join(e.dir, "ran")
	name, w := e.startWaiter(t, marker)

	// status --json: waiting, with the waiting process and when it starts.
	out, stderr, code := e.run(t, "--config", e.config, "status", "--json", name)
	if code != 0 {
		t.Fatalf("status --json: exit %d; %s", code, stderr)
	}
	st := findWaitingGate(t, "status --json", []byte(out), name)
	if st.State != "waiting" || len(st.Waiting) != 1 || st.Waiting[0].Pid != w.Process.Pid ||
		!st.Waiting[0].Until.After(st.Waiting[0].Since.Add(time.Minute-time.Second)) {
		t.Fatalf("status --json of a run waiting its jitter (pid %d): %+v\n%s", w.Process.Pid, st, out)
	}
	until := st.Waiting[0].Until

	// The table: the state and the RUNNING column say it, with the time.
	out, _, _ = e.run(t, "--config", e.config, "status")
	if !strings.Contains(out, "waiting (jitter; starts "+until.Local().Format("01-02 15:04:05")+")") ||
		!strings.Contains(out, fmt.Sprintf("pid %d waiting its jitter, starts %s", w.Process.Pid, until.Local().Format("15:04:05"))) {
		t.Fatalf("status table of a waiting run does not say so, nor when it starts (%v):\n%s", until, out)
	}

	// why: the verdict says it and when the command starts.
	out, _, _ = e.run(t, "--config", e.config, "why", name)
	if !strings.Contains(out, "gate "+name+": waiting: a run has been waiting its jitter since ") ||
		!strings.Contains(out, "its command starts at "+until.Local().Format("2006-01-02 15:04:05")) {
		t.Fatalf("why of a waiting run:\n%s", out)
	}

	// The dashboard's /api/summary: the same state and start time.
	srv := e.startServe(t, "127.0.0.1:0")
	res, body := httpDo(t, "GET", srv.base+"/api/summary", nil, nil)
	if res.StatusCode != 200 {
		t.Fatalf("GET /api/summary: %d %s", res.StatusCode, body)
	}
	sg := findWaitingGate(t, "/api/summary", body, name)
	if sg.State != "waiting" || len(sg.Waiting) != 1 || !sg.Waiting[0].Until.Equal(until) {
		t.Fatalf("/api/summary of a run waiting until %v: %+v", until, sg)
	}
	srv.stop(t)

	// A signal ends the wait: 143, the command never started, and once the
	// process is gone nothing shows it waiting.
	w.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(serveDeadline)
	for {
		out, _, _ = e.run(t, "--config", e.config, "status", "--json", name)
		if g := findWaitingGate(t, "status --json", []byte(out), name); g.State != "waiting" && len(g.Waiting) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting %v after SIGTERM:\n%s", serveDeadline, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the wait was ended by a signal")
	}
}
