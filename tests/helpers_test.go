// Package tests holds end-to-end tests that run the real binaries built from
// ./cmd/... with testscript. This file holds the harness: TestMain builds the
// binaries once, and the custom script commands below are meant to be reused
// by every script suite (withlock today, cron-gate later).
//
// Custom commands (see the doc comment of each cmd* function):
//
//	exitcode N|SIG prog args...   run prog, require that exact outcome
//	bg NAME prog args...          start prog in the background (own process group)
//	signal NAME SIG               send SIG to background process NAME
//	waitbg NAME N|SIG             wait for NAME, require that exact outcome
//	waitfor FILE                  wait until FILE exists
//	waitopen NAME FILE            wait until NAME has FILE open
//	[!] alive PIDFILE             the process whose pid is in PIDFILE is running
//	lockname VAR ABSPATH          VAR = sha256(ABSPATH) + ".lock"
//	pylock [-files] NAME ARGS...  a Python holder using the workers' lock rule
//
// Conditions: [root] is true when the tests run as root (they can then
// make files owned by another user). [python3] is true when python3 is on
// PATH. When python3 is missing the condition is false (so "[!python3] skip"
// skips) unless the environment variable CI is non-empty, in which case the
// condition is an error and the script fails: CI must not silently lose the
// interoperability tests.
//
// Nothing here sleeps and hopes: every wait polls for an observable event
// (a file, an exit, an open descriptor) with a deadline of waitDeadline.
package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/crongate/crongate/tests/testbin"
)

// waitDeadline bounds every wait of the custom commands.
const waitDeadline = 20 * time.Second

// pollInterval is how often the waiting commands look again.
const pollInterval = 5 * time.Millisecond

// envDumpArg makes the test binary write its environment to a file and
// exit; bg uses it to learn the script's exact environment (testscript
// does not export it), see scriptEnviron.
const envDumpArg = "__e2e_envdump__"

var (
	// binDir holds the binaries built from ./cmd/... by TestMain.
	binDir string
	// pyHolder is the path of the Python lock holder written by TestMain.
	pyHolder string
	// pyRuleDir is tests/pyrule, whose pyrule.py the holder imports.
	pyRuleDir string
	// unprivWrapper is the program behind $UNPRIV (see setupScript).
	unprivWrapper string
)

// unprivSh runs its arguments as an unprivileged user: uid and gid 65534
// (nobody), no supplementary groups, when the tests run as root (root
// ignores file modes, so a test of a file it may not write must drop it);
// as themselves otherwise. The environment is kept.
const unprivSh = `#!/bin/sh
if [ "$(id -u)" = 0 ]; then
	exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
fi
exec "$@"
`

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == envDumpArg {
		data := strings.Join(os.Environ(), "\x00")
		if err := os.WriteFile(os.Args[2], []byte(data), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testbin.CatchHangup()
	scriptParallel()
	os.Exit(mainWithBinaries(m))
}

func mainWithBinaries(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "crongate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer testbin.Cleanup()
	if err := buildBinaries(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	leaked := testbin.WatchHostDirs()
	code := m.Run()
	if err := leaked(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// buildBinaries builds the binaries (testbin, shared with the stress and
// fault tests) and writes the Python holder into tmp.
func buildBinaries(tmp string) error {
	dir, err := testbin.Dir()
	if err != nil {
		return err
	}
	binDir = dir
	pyRuleDir = filepath.Join(testbin.Module(), "tests", "pyrule")
	pyHolder = filepath.Join(tmp, "holder.py")
	if err := os.WriteFile(pyHolder, []byte(holderPy), 0o644); err != nil {
		return err
	}
	// tmp is private to this user; the wrapper runs as it.
	unprivWrapper = filepath.Join(tmp, "unpriv")
	return os.WriteFile(unprivWrapper, []byte(unprivSh), 0o755)
}

// stateKey indexes the per-script state in testscript.Env.Values.
type stateKey struct{}

// scriptState is what the custom commands keep for one script run.
type scriptState struct {
	work string // $WORK
	tmp  string // private dir for captured output and env dumps
	bg   map[string]*bgProc
	seq  int
}

// bgProc is a process started by bg or pylock.
type bgProc struct {
	name     string
	cmd      *exec.Cmd
	done     chan struct{} // closed when Wait returned
	stdout   string        // captured output files
	stderr   string
	finished bool // waitbg consumed it
}

// setupScript is the testscript Setup shared by the suites: binaries first
// on PATH, REALWORK (the symlink-free $WORK, which is what canonical paths
// start with), PYHOLDER and PYRULE_DIR for the Python holder, UNPRIV (a
// program that runs its arguments as uid 65534 when the tests run as root,
// as they are otherwise: "exitcode 125 $UNPRIV cron-gate ..." checks what a
// user who may not write a file sees, as root too), and cleanup of every
// process the script left behind.
func setupScript(env *testscript.Env) error {
	env.Setenv("PATH", binDir+string(filepath.ListSeparator)+env.Getenv("PATH"))
	real, err := filepath.EvalSymlinks(env.WorkDir)
	if err != nil {
		return err
	}
	env.Setenv("REALWORK", real)
	env.Setenv("PYHOLDER", pyHolder)
	env.Setenv("PYRULE_DIR", pyRuleDir)
	env.Setenv("UNPRIV", unprivWrapper)
	// Python must not write __pycache__ into tests/pyrule.
	env.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	tmp, err := os.MkdirTemp("", "e2e-state-")
	if err != nil {
		return err
	}
	st := &scriptState{work: env.WorkDir, tmp: tmp, bg: map[string]*bgProc{}}
	env.Values[stateKey{}] = st
	env.Defer(func() {
		st.cleanup(env.T())
		os.RemoveAll(tmp)
	})
	return nil
}

// scriptCmds returns the custom commands, for testscript.Params.Cmds.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"exitcode": cmdExitcode,
		"bg":       cmdBg,
		"signal":   cmdSignal,
		"waitbg":   cmdWaitbg,
		"waitfor":  cmdWaitfor,
		"waitopen": cmdWaitopen,
		"alive":    cmdAlive,
		"lockname": cmdLockname,
		"pylock":   cmdPylock,
		"expand":   cmdExpand,
		"envfile":  cmdEnvfile,
		"json":     cmdJSON,
		"waitjson": cmdWaitjson,
		"waitgrep": cmdWaitgrep,
	}
}

// scriptCondition implements the [python3] condition (see the package
// comment).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "python3":
		if _, err := exec.LookPath("python3"); err != nil {
			if os.Getenv("CI") != "" {
				return false, errors.New("python3 is not on PATH and CI is set: the interoperability tests must run in CI")
			}
			return false, nil
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

func state(ts *testscript.TestScript) *scriptState {
	st, _ := ts.Value(stateKey{}).(*scriptState)
	if st == nil {
		ts.Fatalf("script state missing: Setup must be setupScript")
	}
	return st
}

// outcome is how a process ended: a normal exit with a code, or death by a
// signal. They are kept apart on purpose: "exited 143" and "killed by
// SIGTERM" are different results for a wrapper.
type outcome struct {
	code int            // valid when sig == 0
	sig  syscall.Signal // non-zero: killed by this signal
}

func (o outcome) String() string {
	if o.sig != 0 {
		return fmt.Sprintf("killed by %s", sigName(o.sig))
	}
	return fmt.Sprintf("exit code %d", o.code)
}

// parseOutcome reads a wanted outcome: a decimal exit code 0..255, or a
// signal name (TERM, SIGTERM, KILL, ...) meaning death by that signal.
func parseOutcome(s string) (outcome, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 255 {
			return outcome{}, fmt.Errorf("exit code %d is outside 0..255", n)
		}
		return outcome{code: n}, nil
	}
	sig, err := parseSignal(s)
	if err != nil {
		return outcome{}, fmt.Errorf("%q is neither an exit code nor a signal name", s)
	}
	return outcome{sig: sig}, nil
}

func outcomeOf(ps *os.ProcessState) outcome {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return outcome{sig: ws.Signal()}
	}
	return outcome{code: ps.ExitCode()}
}

var signalNames = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2, "STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM,
}

func parseSignal(s string) (syscall.Signal, error) {
	if sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q (want one of TERM INT HUP QUIT KILL USR1 USR2 STOP CONT PIPE ALRM)", s)
}

func sigName(sig syscall.Signal) string {
	for n, s := range signalNames {
		if s == sig {
			return "SIG" + n
		}
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// cmdExitcode implements
//
//	exitcode N prog args...
//	exitcode SIG prog args...
//
// It runs prog like exec (script environment and directory, stdin from a
// preceding stdin command) and fails unless prog exited with exactly code N,
// or, for a signal name such as KILL, unless prog was killed by that signal.
// An exit code never matches a death by signal and vice versa. prog's stdout
// and stderr become the script's stdout and stderr, so stdout/stderr
// assertions can follow. It cannot be negated.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (give the exit code you expect)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N|SIG prog [args...]")
	}
	want, err := parseOutcome(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	var got outcome
	var ee *exec.ExitError
	switch {
	case err == nil:
		got = outcome{code: 0}
	case errors.As(err, &ee):
		got = outcomeOf(ee.ProcessState)
	default:
		ts.Fatalf("exitcode: cannot run %s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s: got %v, want %v", args[1], got, want)
	}
}

// scriptEnviron returns the script's current environment exactly as exec
// would pass it (including PWD), by running the test binary itself as an
// environment dumper through TestScript.Exec. The script's stdout and
// stderr are preserved.
func scriptEnviron(ts *testscript.TestScript, st *scriptState) []string {
	oldOut, oldErr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	st.seq++
	f := filepath.Join(st.tmp, fmt.Sprintf("env-%d", st.seq))
	self, err := os.Executable()
	ts.Check(err)
	if err := ts.Exec(self, envDumpArg, f); err != nil {
		ts.Fatalf("dumping the script environment: %v", err)
	}
	data, err := os.ReadFile(f)
	ts.Check(err)
	os.Remove(f)
	// Restore what the last exec left for stdout/stderr assertions.
	fmt.Fprint(ts.Stdout(), oldOut)
	fmt.Fprint(ts.Stderr(), oldErr)
	var env []string
	for _, kv := range strings.Split(string(data), "\x00") {
		if kv != "" {
			env = append(env, kv)
		}
	}
	return env
}

// startBg starts argv in the background as NAME, in its own process group,
// with the script's environment and directory, stdin from /dev/null and
// stdout/stderr captured to files (not pipes: a grandchild that keeps them
// open must not delay waitbg).
func startBg(ts *testscript.TestScript, name string, argv []string) *bgProc {
	st := state(ts)
	if p, ok := st.bg[name]; ok && !p.finished {
		ts.Fatalf("background process %q already exists (waitbg it first)", name)
	}
	env := scriptEnviron(ts, st)
	path := argv[0]
	if !strings.Contains(path, "/") {
		lp, err := lookPathIn(path, envValue(env, "PATH"))
		if err != nil {
			ts.Fatalf("bg %s: %v", name, err)
		}
		path = lp
	}
	st.seq++
	p := &bgProc{
		name:   name,
		done:   make(chan struct{}),
		stdout: filepath.Join(st.tmp, fmt.Sprintf("bg-%d-%s.stdout", st.seq, sanitize(name))),
		stderr: filepath.Join(st.tmp, fmt.Sprintf("bg-%d-%s.stderr", st.seq, sanitize(name))),
	}
	stdout, err := os.Create(p.stdout)
	ts.Check(err)
	defer stdout.Close()
	stderr, err := os.Create(p.stderr)
	ts.Check(err)
	defer stderr.Close()
	p.cmd = &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         ts.MkAbs("."),
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := p.cmd.Start(); err != nil {
		ts.Fatalf("bg %s: %v", name, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	st.bg[name] = p
	ts.Setenv(name+"_PID", strconv.Itoa(p.cmd.Process.Pid))
	ts.Logf("[bg %s started, pid %d]", name, p.cmd.Process.Pid)
	return p
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, s)
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPathIn is exec.LookPath against the script's PATH, not the test's.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on the script's PATH", name)
}

// cmdBg implements
//
//	bg NAME prog args...
//
// It starts prog in the background under NAME, sets $NAME_PID to its pid
// and returns at once. prog runs
// in a process group of its own (so that terminal-style group signals from
// the test never reach it by accident), with the script's environment and
// current directory and stdin from /dev/null; its stdout and stderr are kept
// until waitbg NAME. Use waitfor on a file prog writes to know it has got
// going. Whatever is still running when the script ends is killed (see
// cleanup). The script's stdout/stderr are left as they were.
func cmdBg(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! bg")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: bg NAME prog [args...]")
	}
	startBg(ts, args[0], args[1:])
}

func findBg(ts *testscript.TestScript, name string) *bgProc {
	p, ok := state(ts).bg[name]
	if !ok || p.finished {
		ts.Fatalf("no running background process %q", name)
	}
	return p
}

func (p *bgProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cmdSignal implements
//
//	signal NAME SIG
//
// It sends SIG (TERM, INT, HUP, QUIT, KILL, USR1, USR2, STOP, CONT, PIPE,
// ALRM, with or without "SIG") to the background process NAME itself, not to
// its process group: what a wrapper does with a signal it receives is what
// is under test. It fails if NAME has already exited.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! signal")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: signal NAME SIG")
	}
	p := findBg(ts, args[0])
	sig, err := parseSignal(args[1])
	ts.Check(err)
	if p.exited() {
		ts.Fatalf("signal %s: %s already exited (%v)", args[1], args[0], outcomeOf(p.cmd.ProcessState))
	}
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		ts.Fatalf("signal %s %s: %v", args[0], args[1], err)
	}
}

// cmdWaitbg implements
//
//	waitbg NAME N
//	waitbg NAME SIG
//
// It waits (at most waitDeadline, then kills NAME's process group and
// fails) for the background process NAME to end, then fails unless it
// exited with exactly code N, or, for a signal name, was killed by that
// signal. NAME's stdout and stderr become the script's stdout and stderr.
// After waitbg, NAME may be reused by bg.
func cmdWaitbg(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitbg (give the exit code you expect)")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: waitbg NAME N|SIG")
	}
	want, err := parseOutcome(args[1])
	ts.Check(err)
	p := findBg(ts, args[0])
	timer := time.NewTimer(waitDeadline)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.finished = true
		p.showOutput(ts)
		ts.Fatalf("waitbg %s: still running after %v; killed it", args[0], waitDeadline)
	}
	p.finished = true
	p.showOutput(ts)
	got := outcomeOf(p.cmd.ProcessState)
	if got != want {
		ts.Fatalf("waitbg %s: got %v, want %v", args[0], got, want)
	}
}

func (p *bgProc) showOutput(ts *testscript.TestScript) {
	out, _ := os.ReadFile(p.stdout)
	errOut, _ := os.ReadFile(p.stderr)
	ts.Stdout().Write(out)
	ts.Stderr().Write(errOut)
}

// poll calls f every pollInterval until it returns true or waitDeadline
// passes; it reports whether f returned true. If p is not nil and exits
// meanwhile, polling stops early (after one last call) and returns false.
func poll(p *bgProc, f func() bool) bool {
	end := time.Now().Add(waitDeadline)
	for {
		if f() {
			return true
		}
		if p != nil && p.exited() {
			return f()
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// bgStatus describes the background processes, for failure messages.
func bgStatus(ts *testscript.TestScript) string {
	var b strings.Builder
	for name, p := range state(ts).bg {
		if p.finished {
			continue
		}
		if p.exited() {
			errOut, _ := os.ReadFile(p.stderr)
			fmt.Fprintf(&b, "\n  bg %s exited early (%v); stderr: %q", name, outcomeOf(p.cmd.ProcessState), errOut)
		} else {
			fmt.Fprintf(&b, "\n  bg %s running (pid %d)", name, p.cmd.Process.Pid)
		}
	}
	return b.String()
}

// cmdWaitfor implements
//
//	waitfor FILE
//
// It polls every few milliseconds until FILE (relative to the script's
// current directory) exists, and fails after waitDeadline. Scripts use it to
// synchronise with a background command that writes FILE once it is in the
// state under test, instead of sleeping.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitfor")
	}
	if len(args) != 1 {
		ts.Fatalf("usage: waitfor FILE")
	}
	f := ts.MkAbs(args[0])
	if !poll(nil, func() bool { _, err := os.Lstat(f); return err == nil }) {
		ts.Fatalf("waitfor %s: does not exist after %v%s", args[0], waitDeadline, bgStatus(ts))
	}
}

// cmdWaitopen implements
//
//	waitopen NAME FILE
//
// It polls until the background process NAME has FILE open (one of the
// links in /proc/PID/fd points at it), and fails after waitDeadline or if
// NAME exits first. Scripts use it to know that a waiting process has made
// its first attempt (e.g. withlock --wait opens a lock file before trying
// it and keeps it open while it waits).
func cmdWaitopen(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitopen")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: waitopen NAME FILE")
	}
	p := findBg(ts, args[0])
	want := ts.MkAbs(args[1])
	if r, err := filepath.EvalSymlinks(want); err == nil {
		want = r
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	ok := poll(p, func() bool {
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			return false
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && l == want {
				return true
			}
		}
		return false
	})
	if !ok {
		ts.Fatalf("waitopen %s %s: not open after %v%s", args[0], args[1], waitDeadline, bgStatus(ts))
	}
}

// cmdAlive implements
//
//	[!] alive PIDFILE
//
// alive succeeds if the process whose decimal pid is in PIDFILE exists and
// is not a zombie, at the moment of the check. "! alive" waits (at most
// waitDeadline, polling) for that process to be gone or a zombie (it has
// exited and only waits to be reaped): a process killed through its group
// may take a moment to be scheduled and die.
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] alive PIDFILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil || pid <= 0 {
		ts.Fatalf("alive: %s does not hold a pid", args[0])
	}
	if !neg {
		if !processAlive(pid) {
			ts.Fatalf("process %d is not running", pid)
		}
		return
	}
	if !poll(nil, func() bool { return !processAlive(pid) }) {
		ts.Fatalf("process %d is still running after %v", pid, waitDeadline)
	}
}

// processAlive tells whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] != 'Z' && data[i+2] != 'X'
}

// cmdLockname implements
//
//	lockname VAR ABSPATH
//
// It sets VAR to sha256(ABSPATH) in lower-case hex + ".lock", the lock-file
// name the Python workers use for a path whose resolved form is ABSPATH.
// ABSPATH is hashed as given: it must already be canonical (absolute, clean;
// use $REALWORK, not $WORK, and no symlinks), and this is checked as far as
// it can be without resolving anything.
func cmdLockname(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! lockname")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: lockname VAR ABSPATH")
	}
	p := args[1]
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		ts.Fatalf("lockname: %q is not an absolute, clean path", p)
	}
	ts.Setenv(args[0], sha256Hex(p)+".lock")
}

// cmdPylock implements
//
//	pylock NAME PATH...
//	pylock -files NAME FILE...
//
// It starts, as background process NAME, a python3 holder that takes the
// locks with the seed's own code (tests/pyrule/blog_file_lock.py, see
// holderPy): try_acquire_file_locks(PATHs, lock_dir=$WITHLOCK_LOCK_DIR),
// i.e. Path(p).resolve(strict=False), sorted, sha256(str(path)).hexdigest()
// + ".lock", os.open(O_CREAT|O_RDWR, 0o664), fcntl.flock(LOCK_EX|LOCK_NB);
// or, with -files, acquire_slot([FILE]) for each FILE (slot files, taken
// the classifier's way). PATHs are resolved by Python against the script's
// current directory. pylock returns once every lock is held and fails if
// one was busy. The holder keeps the locks until it gets TERM, INT or HUP,
// then exits 0: release it with "signal NAME TERM" and "waitbg NAME 0".
// python3 missing is an error here; guard scripts with "[!python3] skip".
func cmdPylock(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! pylock")
	}
	mode := "hold"
	if len(args) > 0 && args[0] == "-files" {
		mode, args = "holdfiles", args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: pylock [-files] NAME PATH...")
	}
	name := args[0]
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			ts.Fatalf("pylock: %q looks like a flag (flags go before NAME; write ./%s for such a path)", a, a)
		}
	}
	lockDir := ts.Getenv("WITHLOCK_LOCK_DIR")
	if mode == "hold" && lockDir == "" {
		ts.Fatalf("pylock: set WITHLOCK_LOCK_DIR first (never the default lock dir)")
	}
	st := state(ts)
	st.seq++
	ready := filepath.Join(st.tmp, fmt.Sprintf("pylock-%d.ready", st.seq))
	argv := []string{"python3", "-B", pyHolder, mode, ready}
	if mode == "hold" {
		argv = append(argv, lockDir)
	}
	argv = append(argv, args[1:]...)
	p := startBg(ts, name, argv)
	ok := poll(p, func() bool { _, err := os.Stat(ready); return err == nil })
	if !ok {
		if p.exited() {
			p.finished = true
			p.showOutput(ts)
			ts.Fatalf("pylock %s: the holder exited (%v) without taking the locks", name, outcomeOf(p.cmd.ProcessState))
		}
		ts.Fatalf("pylock %s: not ready after %v", name, waitDeadline)
	}
}

// cleanup kills what the script left running: every background process's
// group, then every process whose environment carries this script's
// WORK=... (the commands withlock started in process groups of their own,
// including orphans of a SIGKILLed withlock), and reaps the background
// processes.
func (st *scriptState) cleanup(t testscript.T) {
	for name, p := range st.bg {
		if !p.exited() {
			t.Log(fmt.Sprintf("cleanup: killing background process %s (pid %d)", name, p.cmd.Process.Pid))
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	marker := []byte("WORK=" + st.work + "\x00")
	self := os.Getpid()
	for round := 0; round < 3; round++ {
		killed := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			data = append(append([]byte{0}, data...), 0)
			if err != nil || !bytes.Contains(data, append([]byte{0}, marker...)) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			break
		}
	}
	for _, p := range st.bg {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			t.Log(fmt.Sprintf("cleanup: background process %s (pid %d) did not exit", p.name, p.cmd.Process.Pid))
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// holderPy is the Python lock holder behind pylock (and usable directly as
// "python3 $PYHOLDER try LOCKDIR PATH..."). It runs the seed's own lock code,
// tests/pyrule/blog_file_lock.py (try_acquire_file_locks for paths,
// acquire_slot for slot files), imported from $PYRULE_DIR. Without that
// fixture it takes the rule from tests/pyrule/pyrule.py, and without that
// one from the same rule written out here. Modes:
//
//	hold READY LOCKDIR PATH...  lock the paths (all or nothing), touch READY,
//	                            hold until TERM/INT/HUP, exit 0; exit 75 if busy
//	holdfiles READY FILE...     lock each file as a slot file, the same way
//	try LOCKDIR PATH...         one-shot try_acquire_file_locks: print
//	                            "acquired" and exit 0 (releasing at once), or
//	                            print "busy" and the canonical paths, exit 75
//
// The first line on stderr names the rule's source.
const holderPy = `import fcntl
import hashlib
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, os.environ.get("PYRULE_DIR", ""))


# The seed's own code (tests/pyrule/blog_file_lock.py), not a copy of it.
from blog_file_lock import _canonical, acquire_slot, try_acquire_file_locks  # noqa: E402
source = "tests/pyrule/blog_file_lock.py (seed 000)"
print("python lock rule: " + source, file=sys.stderr, flush=True)


def wait_for_release(ready):
    with open(ready, "w"):
        pass
    signal.sigwait({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    sys.exit(0)


def main():
    # Block the release signals first and wait for them with sigwait, so
    # that one arriving at any moment is never lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "hold":
        ready, lockdir, paths = args[0], args[1], args[2:]
        os.makedirs(lockdir, exist_ok=True)
        held = try_acquire_file_locks(paths, lock_dir=lockdir)
        if held is None:
            print("busy " + " ".join(str(c) for c in _canonical(paths)), flush=True)
            sys.exit(75)
        print("holding " + " ".join(str(c) for c in held.paths), flush=True)
        wait_for_release(ready)
    elif mode == "holdfiles":
        ready, files, kept = args[0], args[1:], []
        for f in files:
            i, fh = acquire_slot([f])
            if fh is None:
                print("busy " + f, flush=True)
                sys.exit(75)
            kept.append(fh)
        print("holding " + " ".join(files), flush=True)
        wait_for_release(ready)
    elif mode == "try":
        lockdir, paths = args[0], args[1:]
        os.makedirs(lockdir, exist_ok=True)
        held = try_acquire_file_locks(paths, lock_dir=lockdir)
        if held is None:
            print("busy " + " ".join(str(c) for c in _canonical(paths)), flush=True)
            sys.exit(75)
        print("acquired", flush=True)
        for fd in held.fds:
            os.close(fd)
    else:
        sys.exit("unknown mode " + mode)


main()
`

// scriptParallel raises -test.parallel in the fast tier, unless it was
// given, to four per CPU: a testscript mostly waits (for processes, locks, signals), so on 2
// cores the default of 2 left the CPU two-thirds idle and made this
// package the fast tier's critical path (docs/tests.md).
func scriptParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	// The full tier keeps the default: its stress and fault packages
	// load both cores beside this one.
	if !given && !testbin.FullTier() {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}
