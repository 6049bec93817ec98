package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/tests/testbin"
)

// The guard ends the process, so it is tested in a child: this test
// binary run again with GUARD_HELPER set, which does what the mode says,
// prints "ready" once it is in the state under test, and blocks.
const guardHelperEnv = "RUNNER_GUARD_HELPER"

// guardDeadline bounds every wait of these tests (a hang, not a timing).
const guardDeadline = 20 * time.Second

func TestMain(m *testing.M) {
	if mode := os.Getenv(guardHelperEnv); mode != "" {
		guardHelper(mode)
		os.Exit(99) // not reached
	}
	testbin.CatchHangup()
	os.Exit(m.Run())
}

func guardHelper(mode string) {
	// No core file from a SIGQUIT that takes the default action.
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	switch mode {
	case "nonotify":
		// A program before any Notify (withlock until its dispatch to
		// withlock-etcd has exec'd).
		fmt.Println("ready")
		block()
	}
	c := Notify()
	switch mode {
	case "armed":
		// Before any command: blocked, as withlock reading a --paths-from
		// pipe that never ends.
		fmt.Println("ready")
		block()
	case "disarmed":
		Disarm()
		fmt.Println("ready")
		s := <-c
		fmt.Println("got", s)
		os.Exit(0)
	case "abortrace":
		// While the abort runs, the rest of the program fails (on a
		// lease the abort revoked, say): it prints and exits 125.
		OnAbort(func() {
			go func() {
				fmt.Fprintln(os.Stderr, "the rest of the program fails")
				Exit(ExitFailure)
			}()
			for deadline := time.Now().Add(guardDeadline); exitWaiting.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		})
		fmt.Println("ready")
		block()
	case "onabort":
		OnAbort(func() { os.WriteFile(os.Getenv("RUNNER_GUARD_MARK"), []byte("abort ran\n"), 0o644) })
		fmt.Println("ready")
		block()
	case "handoff":
		if _, stop := HandOff(c); stop {
			os.Exit(98)
		}
		fmt.Println("ready")
		block()
	case "started":
		// The command runs: signals are forwarded to it, as before.
		ch, err := Prepare(Spec{Argv: []string{"sh", "-c", `trap "exit 7" TERM; echo ready; while :; do sleep 0.05; done`}})
		if err == nil {
			err = ch.Start()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(97)
		}
		os.Exit(ch.Wait(c, time.Now()).Code)
	}
	os.Exit(96)
}

func block() {
	for {
		time.Sleep(time.Hour)
	}
}

// runGuardHelper starts the helper in mode, waits for "ready", sends sig
// and returns how the helper ended and its stderr.
func runGuardHelper(t *testing.T, mode string, sig syscall.Signal) (*os.ProcessState, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), guardHelperEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper %s: first line %q, want ready; stderr %q", mode, l, stderr.String())
		}
	case <-time.After(guardDeadline):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper %s: not ready after %v", mode, guardDeadline)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(guardDeadline):
		cmd.Process.Kill()
		<-done
		t.Fatalf("helper %s: still running %v after %v", mode, guardDeadline, sig)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if len(rest) > 0 {
		stderr.WriteString("stdout: " + strings.Join(rest, "|"))
	}
	return cmd.ProcessState, stderr.String()
}

func exitedWith(ps *os.ProcessState) string {
	ws := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

// Before the command starts, each forwarded signal ends the process at
// once with 128+N, an exit, not a death by the signal, and QUIT prints no
// goroutine dump.
func TestGuardEndsProcessBeforeStart(t *testing.T) {
	for _, sig := range []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT} {
		ps, stderr := runGuardHelper(t, "armed", sig)
		if got, want := exitedWith(ps), fmt.Sprintf("exit %d", 128+int(sig)); got != want {
			t.Errorf("%v before the command: %s, want %s; stderr %q", sig, got, want, stderr)
		}
		if stderr != "" {
			t.Errorf("%v before the command: stderr %q, want nothing", sig, stderr)
		}
	}
}

// Disarmed (serve, check), a signal arrives on the channel instead.
func TestGuardDisarmedDelivers(t *testing.T) {
	ps, stderr := runGuardHelper(t, "disarmed", unix.SIGTERM)
	if got := exitedWith(ps); got != "exit 0" || !strings.Contains(stderr, "got terminated") {
		t.Errorf("TERM after Disarm: %s, output %q; want exit 0 and the signal received", got, stderr)
	}
}

// After HandOff a signal takes its default action until the exec: TERM
// kills, and QUIT kills without the Go runtime's goroutine dump.
func TestGuardHandOffDefaultAction(t *testing.T) { wantDefaultAction(t, "handoff", "after HandOff") }

// wantDefaultAction checks that TERM and QUIT kill the helper in mode,
// QUIT without the Go runtime's goroutine dump; when says when.
func wantDefaultAction(t *testing.T, mode, when string) {
	t.Helper()
	for _, sig := range []syscall.Signal{unix.SIGTERM, unix.SIGQUIT} {
		ps, stderr := runGuardHelper(t, mode, sig)
		if got, want := exitedWith(ps), "killed by "+sig.String(); got != want {
			t.Errorf("%v %s: %s, want %s; stderr %q", sig, when, got, want, stderr)
		}
		if strings.Contains(stderr, "goroutine") {
			t.Errorf("%v %s printed a goroutine dump: %q", sig, when, stderr)
		}
	}
}

// A function registered with OnAbort runs when a signal ends the process
// before the command, and the process then exits 128+N as without it.
func TestGuardOnAbort(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	t.Setenv("RUNNER_GUARD_MARK", mark)
	ps, stderr := runGuardHelper(t, "onabort", unix.SIGTERM)
	ran, _ := os.ReadFile(mark)
	if got := exitedWith(ps); got != "exit 143" || stderr != "" || string(ran) != "abort ran\n" {
		t.Errorf("TERM with an OnAbort function: %s, stderr %q, the function wrote %q; want exit 143, nothing said, the function run", got, stderr, ran)
	}
}

// The rest of the program failing while the abort runs changes nothing:
// its message goes nowhere and its exit (Exit) waits, so the process ends
// 143, silently. Before, it could end 125 with an error message (an etcd
// waiter whose lease the abort revoked under its transaction).
func TestGuardAbortRace(t *testing.T) {
	ps, stderr := runGuardHelper(t, "abortrace", unix.SIGTERM)
	if got := exitedWith(ps); got != "exit 143" || stderr != "" {
		t.Errorf("TERM, the program failing during the abort: %s, stderr %q; want exit 143 and nothing", got, stderr)
	}
}

// Before any Notify — in main, as withlock is until it has exec'd
// withlock-etcd, and during the package inits, as withlock-etcd is for
// milliseconds (initblock: this package's test init blocks) — TERM kills,
// and so does QUIT, silently, not with the Go runtime's goroutine dump
// and exit 2 (internal/earlyquit). Notify then catches QUIT again
// (TestGuardEndsProcessBeforeStart: exit 131).
func TestQuitBeforeNotify(t *testing.T) {
	wantDefaultAction(t, "nonotify", "in main, before Notify")
	wantDefaultAction(t, "initblock", "during the package inits")
}

// initblock stands for a slow package init (the etcd client's): with the
// helper's variable set to "initblock", this package's init says ready
// and blocks, before main and before any Notify.
func init() {
	if os.Getenv(guardHelperEnv) == "initblock" {
		fmt.Println("ready")
		block()
	}
}

// Once the command has started, signals are forwarded to it (its trap
// decides the code), not acted on by the guard.
func TestGuardForwardsAfterStart(t *testing.T) {
	ps, stderr := runGuardHelper(t, "started", unix.SIGTERM)
	if got := exitedWith(ps); got != "exit 7" {
		t.Errorf("TERM while the command runs: %s, want exit 7 (the command's trap); stderr %q", got, stderr)
	}
}
