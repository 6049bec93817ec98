// Package fault injects faults into the real binaries (built by testbin):
// SIGKILL of withlock, of cron-gate and of the command at random moments,
// signals sent to a cron-gate + withlock chain, a state dir that fills up,
// a lock dir removed under its holders, and wall-clock jumps seen by the
// journal and the status. docs/reliability.md says what each test proves, how
// many iterations it runs and how to run the long modes.
//
// The critical section used here is tests/fault/faultworker, a variant of
// tests/csworker whose markers name their owner, so that a worker killed
// inside its critical section leaves a marker that is recognised as stale
// instead of being reported as an overlap.
package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/tests/testbin"
)

// deadline bounds every wait for processes to exit or files to appear.
const deadline = 20 * time.Second

var (
	binDir string // withlock, cron-gate, csworker (testbin) and faultworker
)

func TestMain(m *testing.M) {
	testbin.CatchHangup()
	if !testbin.FullTier() {
		os.Exit(m.Run()) // every test skips (full): nothing to build
	}
	code := func() int {
		defer testbin.Cleanup()
		dir, err := testbin.Dir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		binDir = dir
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "faultworker"), "./tests/fault/faultworker")
		build.Dir = testbin.Module()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build faultworker: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func bin(name string) string { return filepath.Join(binDir, name) }

// needRoot skips a test that needs root, unless CI is set: there every
// test is required, and a missing privilege is a failure.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s needs root, and CI is set: this test is required there", why)
	}
	t.Skipf("%s needs root", why)
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// result is how a process ended.
type result struct {
	code int            // exit code when sig == 0
	sig  syscall.Signal // killed by this signal
	err  error          // could not be waited for
}

func (r result) String() string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case r.sig != 0:
		return "killed by " + unix.SignalName(r.sig)
	}
	return fmt.Sprintf("exit %d", r.code)
}

func resultOf(ps *os.ProcessState, err error) result {
	if ps == nil {
		return result{err: err}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return result{sig: ws.Signal()}
	}
	return result{code: ps.ExitCode()}
}

// proc is a started process whose end is awaited in the background.
type proc struct {
	cmd     *exec.Cmd
	errFile string // its stderr: a file, not a pipe, so that an orphan
	// that keeps it open cannot delay Wait
	done chan struct{}
	res  result
}

// stderr returns what p has written to its stderr so far.
func (p *proc) stderr() string {
	data, _ := os.ReadFile(p.errFile)
	return string(data)
}

// start starts argv with env appended to the test's environment, stdin
// /dev/null (as under cron: process groups of their own), stdout discarded
// and stderr kept in a file.
func start(t *testing.T, env []string, argv ...string) *proc {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), errFile: f.Name(), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = f
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	go func() {
		err := p.cmd.Wait()
		p.res = resultOf(p.cmd.ProcessState, err)
		close(p.done)
	}()
	return p
}

// wait waits for p until the deadline, then kills it and fails.
func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(deadline):
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		t.Fatalf("%v still running after %v; killed it. stderr: %s", p.cmd.Args, deadline, p.stderr())
	}
	return p.res
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// run runs argv to the end (bounded by the deadline) and returns its
// result, stdout and stderr.
func run(t *testing.T, env []string, argv ...string) (result, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// An orphan left holding the pipes must not hang the test.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after %v", argv, deadline)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", argv, err)
	}
	return resultOf(cmd.ProcessState, err), out.String(), errb.String()
}

// procStat returns the state letter and start time (clock ticks since
// boot) of pid, and false if there is no such process.
func procStat(pid int) (byte, uint64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	return f[0][0], ticks, err == nil
}

// running reports whether pid (started at ticks, if ticks is not 0) exists
// and is not a zombie: a zombie has closed every descriptor, so it holds
// no lock.
func running(pid int, ticks uint64) bool {
	st, t, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X' && (ticks == 0 || t == ticks)
}

// waitGone polls until pid (started at ticks) is no longer running, and
// reports false if it still runs at the deadline.
func waitGone(pid int, ticks uint64, until time.Time) bool {
	for running(pid, ticks) {
		if time.Now().After(until) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// readPidfile reads "PID TICKS" as written by faultworker.
func readPidfile(name string) (int, uint64, bool) {
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, 0, false
	}
	var pid int
	var ticks uint64
	if _, err := fmt.Sscanf(string(data), "%d %d", &pid, &ticks); err != nil {
		return 0, 0, false
	}
	return pid, ticks, true
}

// childrenOf lists the children of pid (every thread's).
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []int
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(s); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// mkdirs creates dirs under root and returns their paths.
func mkdirs(t *testing.T, root string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// realTempDir is t.TempDir with symlinks resolved, so that canonical paths
// start with it.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// gateEnv is the environment that keeps cron-gate inside root: config,
// state and cache there (never /etc/cron-gate or /var/lib/cron-gate).
func gateEnv(root string) []string {
	return []string{
		"CRON_GATE_CONFIG=" + filepath.Join(root, "config.toml"),
		"CRON_GATE_STATE_DIR=" + filepath.Join(root, "state"),
		"CRON_GATE_CACHE_DIR=" + filepath.Join(root, "cache"),
	}
}

// full skips a test of this package outside the full tier: fault
// injection kills processes at random moments over many rounds.
func full(t *testing.T) {
	t.Helper()
	testbin.Full(t, "fault injection (tests/fault) runs many rounds of kills and signals")
}
