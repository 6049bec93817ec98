package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the runner's copy goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFile polls for a file the command writes (its pid, once it is in
// the state under test) and returns the pid in it.
func waitFile(t *testing.T, path string) int {
	t.Helper()
	end := time.Now().Add(guardDeadline)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("%s: %q is not a pid", path, data)
			}
			return pid
		}
		if time.Now().After(end) {
			t.Fatalf("%s not written after %v", path, guardDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// live reports whether pid exists and is not a zombie.
func live(pid int) bool {
	return ProcessLive(pid)
}

// waitBounded runs Wait in a goroutine and fails the test if it has not
// returned after guardDeadline (a hang, not a timing).
func waitBounded(t *testing.T, c *Child, start time.Time) Result {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- c.Wait(make(chan os.Signal), start) }()
	select {
	case r := <-done:
		return r
	case <-time.After(guardDeadline):
		syscall.Kill(-c.Pid(), syscall.SIGKILL)
		t.Fatalf("Wait has not returned after %v", guardDeadline)
		return Result{}
	}
}

// drainBounded is Drain, failing the test if it has not returned after
// guardDeadline.
func drainBounded(t *testing.T, c *Child) bool {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- c.Drain() }()
	select {
	case cut := <-done:
		return cut
	case <-time.After(guardDeadline):
		t.Fatalf("Drain has not returned after %v", guardDeadline)
		return false
	}
}

func startChild(t *testing.T, spec Spec) *Child {
	t.Helper()
	c, err := Prepare(spec)
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-c.Pid(), syscall.SIGKILL) })
	return c
}

// A timeout whose TERM ends the command's leader but not a process it
// started that ignores TERM: KILL still reaches that process at
// KillAfter, and it is gone before Wait returns (so a lock it inherited is
// free when withlock exits).
func TestTimeoutKillsGroupAfterLeaderExits(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "member.pid")
	// The member ignores TERM (inherited SIG_IGN); the leader resets its
	// own TERM before it says the member is there, so that TERM ends it.
	script := `trap "" TERM; sleep 30 & m=$!; trap - TERM; echo $m > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 100`
	c := startChild(t, Spec{Argv: []string{"sh", "-c", script, "sh", f}, Timeout: 100 * time.Millisecond, KillAfter: 300 * time.Millisecond})
	member := waitFile(t, f)
	// The timeout counts from here: the member is set up by now.
	res := waitBounded(t, c, time.Now())
	if !res.TimedOut || res.Code != ExitTimeout {
		t.Errorf("Wait = %+v; want a timeout, code %d", res, ExitTimeout)
	}
	if live(member) {
		t.Errorf("the group's TERM-ignoring member %d is alive after Wait returned; want it KILLed at --kill-after though the leader had exited", member)
	}
}

// Without a timeout, the run ends when the leader exits: what it left
// behind in its group is neither waited for nor killed.
func TestLeaderExitEndsRun(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "member.pid")
	c := startChild(t, Spec{Argv: []string{"sh", "-c", `sleep 30 & echo $! > "$1"`, "sh", f}, Timeout: time.Hour})
	res := waitBounded(t, c, time.Now())
	if res.TimedOut || res.Code != 0 {
		t.Errorf("Wait = %+v; want exit 0", res)
	}
	if m := waitFile(t, f); !live(m) {
		t.Errorf("the process %d the command left behind was killed; want it left alone", m)
	}
}

// Output through pipes the runner owns: a process left behind that holds
// the pipe cannot hold Wait; the drain is cut and says so, and End is the
// command's end, not the drain's.
func TestDrainIsBounded(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bg.pid")
	var out, errOut syncBuffer
	drain := 200 * time.Millisecond
	c := startChild(t, Spec{Argv: []string{"sh", "-c", `echo hi; echo there >&2; sleep 30 & echo $! > "$1"`, "sh", f},
		Stdout: &out, Stderr: &errOut, Drain: drain})
	res := waitBounded(t, c, time.Now())
	cut := drainBounded(t, c)
	returned := time.Now()
	if res.Code != 0 || !cut {
		t.Errorf("Wait = %+v, cut %v; want exit 0 and the output cut (sleep 30 holds the pipes)", res, cut)
	}
	if out.String() != "hi\n" || errOut.String() != "there\n" {
		t.Errorf("output %q / %q; want hi / there", out.String(), errOut.String())
	}
	if returned.Sub(res.End) < drain {
		t.Errorf("End %v is less than the drain (%v) before Drain returned (%v): it must be the command's end, not the drain's", res.End, drain, returned)
	}
	syscall.Kill(waitFile(t, f), syscall.SIGKILL)
}

// A command that closes its output when it exits loses nothing.
func TestDrainComplete(t *testing.T) {
	var out, errOut syncBuffer
	c := startChild(t, Spec{Argv: []string{"sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done; echo done >&2; exit 3`},
		Stdout: &out, Stderr: &errOut})
	res := waitBounded(t, c, time.Now())
	if cut := drainBounded(t, c); res.Code != 3 || cut {
		t.Errorf("Wait = %+v, cut %v; want exit 3, nothing cut", res, cut)
	}
	if n := strings.Count(out.String(), "\n"); n != 2000 || errOut.String() != "done\n" {
		t.Errorf("%d lines on stdout, stderr %q; want 2000 and done", n, errOut.String())
	}
}

// A Stdin that is not a file is copied into a pipe.
func TestStdinReader(t *testing.T) {
	var out syncBuffer
	c := startChild(t, Spec{Argv: []string{"sh", "-c", `read l; echo "got $l"`}, Stdin: strings.NewReader("x\n"), Stdout: &out})
	res := waitBounded(t, c, time.Now())
	drainBounded(t, c)
	if res.Code != 0 || out.String() != "got x\n" {
		t.Errorf("Wait = %+v, output %q; want got x", res, out.String())
	}
}
