// Package runner runs the wrapped command for withlock and cron-gate: one
// place that decides the child's process group, forwards signals, enforces a
// timeout and turns the way the child ended into an exit code.
//
// Guarantees:
//   - the command's own exit code is passed through; a death by signal N
//     becomes 128+N; a timeout becomes 124; a command that cannot be found is
//     127 and one that cannot be executed is 126 (see exitcode.go);
//   - until the command starts, a forwarded signal ends the wrapper at once
//     with 128+N (guard.go); once it runs, the child runs in a process group
//     of its own, TERM, INT, HUP and QUIT received by the wrapper are
//     forwarded to that whole group, and the wrapper keeps waiting until the
//     child has exited;
//   - on timeout the group gets TERM, then KILL after a grace period;
//   - values in Spec.Env are appended after os.Environ(), so they win;
//   - Spec.ExtraFiles are inherited by the child as fds 3, 4, ... (this is
//     how withlock's locks outlive a SIGKILLed wrapper).
//
// It does not kill processes the command leaves behind after it exits.
package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultKillAfter is the grace between TERM and KILL when a timeout fires.
const DefaultKillAfter = 10 * time.Second

// defaultPath is used to find the command when PATH is unset, as execvp(3)
// does with confstr(_CS_PATH) on glibc.
const defaultPath = "/bin:/usr/bin"

// Forwarded lists the signals a wrapper passes on to the command.
var Forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT}

// Spec describes the command to run.
type Spec struct {
	Argv       []string
	Env        []string   // appended after os.Environ()
	ExtraFiles []*os.File // inherited as fd 3+i
	Stdin      io.Reader  // nil: the wrapper's own stdin
	Stdout     io.Writer  // nil: the wrapper's own stdout
	Stderr     io.Writer  // nil: the wrapper's own stderr
	Timeout    time.Duration
	KillAfter  time.Duration // 0: DefaultKillAfter
}

// Result tells how the command ended.
type Result struct {
	Code     int            // what the wrapper should exit with
	Pid      int            // 0 if it never started
	Signal   syscall.Signal // non-zero if the command died of a signal
	TimedOut bool
	Start    time.Time
	End      time.Time
}

// Child is a command resolved and ready to start.
type Child struct {
	spec Spec
	cmd  *exec.Cmd
	tty  bool // stdin is a terminal: no process group of its own
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// StartError is returned when the command could not be started; Code is 126,
// 127 or 125 as the cause dictates.
type StartError struct {
	Argv0 string
	Code  int
	Err   error
}

func (e *StartError) Error() string {
	switch e.Code {
	case ExitNotFound:
		return fmt.Sprintf("%s: command not found", e.Argv0)
	case ExitCannotRun:
		var pe *fs.PathError
		if errors.As(e.Err, &pe) {
			return fmt.Sprintf("%s: cannot execute %s: %v", e.Argv0, pe.Path, pe.Err)
		}
		return fmt.Sprintf("%s: cannot execute: %v", e.Argv0, unwrapSyscall(e.Err))
	}
	return fmt.Sprintf("start %s: %v", e.Argv0, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Prepare resolves the command on PATH without running it, so that a missing
// command is reported before any lock is taken.
func Prepare(spec Spec) (*Child, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("no command given")
	}
	name := spec.Argv[0]
	path, err := lookPath(name)
	if err != nil {
		return nil, classify(name, err)
	}
	cmd := &exec.Cmd{Path: path, Args: spec.Argv}
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.ExtraFiles = spec.ExtraFiles
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	if cmd.Stdin == nil {
		cmd.Stdin = os.Stdin
	}
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	c := &Child{spec: spec, cmd: cmd}
	// Under cron (no terminal) the command gets a process group of its
	// own, so that a timeout or a forwarded signal reaches everything it
	// started. On a terminal it stays in the wrapper's group, which is the
	// terminal's foreground group: a background group would be stopped by
	// SIGTTIN at its first read. The terminal then sends ^C and ^\ to the
	// command itself, so INT and QUIT are not forwarded a second time.
	c.tty = isTerminal(cmd.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !c.tty}
	return c, nil
}

// lookPath is exec.LookPath with execvp's default search path when PATH is
// unset (cron may start us with an empty environment).
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = defaultPath
	}
	// As execvp(3) and the shells: the first executable match wins; if
	// there is none but a file of that name exists, it is "found but not
	// executable" (126), not "not found" (127).
	var denied error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if unix.Access(p, unix.X_OK) == nil {
			if !filepath.IsAbs(p) {
				return p, exec.ErrDot
			}
			return p, nil
		}
		if denied == nil {
			denied = &fs.PathError{Op: "exec", Path: p, Err: fs.ErrPermission}
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", exec.ErrNotFound
}

func classify(name string, err error) error {
	code := ExitFailure
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR):
		code = ExitNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, unix.ENOEXEC), errors.Is(err, unix.EISDIR),
		errors.Is(err, exec.ErrDot), errors.Is(err, unix.ETXTBSY), errors.Is(err, unix.ELOOP):
		code = ExitCannotRun
	}
	return &StartError{Argv0: name, Code: code, Err: err}
}

func unwrapSyscall(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// ExitCode returns the exit code a wrapper should use for err from Prepare or
// Start.
func ExitCode(err error) int {
	var se *StartError
	if errors.As(err, &se) {
		return se.Code
	}
	return ExitFailure
}

// AddEnv appends entries to the command's environment (after os.Environ(),
// so they win). Call it before Start.
func (c *Child) AddEnv(env ...string) { c.cmd.Env = append(c.cmd.Env, env...) }

// AddFiles hands files to the command: the first file added becomes fd
// 3+len(Files()) in the command. Call it before Start.
func (c *Child) AddFiles(files ...*os.File) { c.cmd.ExtraFiles = append(c.cmd.ExtraFiles, files...) }

// Files returns the files the command will inherit, in fd order from 3.
func (c *Child) Files() []*os.File { return c.cmd.ExtraFiles }

// Start starts the command. Errors are *StartError.
//
// It disarms the guard (guard.go) in the same critical section as the
// fork: a signal from now on is forwarded to the command by Wait.
func (c *Child) Start() error {
	if err := startDisarming(c.cmd.Start); err != nil {
		return classify(c.spec.Argv[0], err)
	}
	return nil
}

// Pid is the child's process ID once started.
func (c *Child) Pid() int {
	if c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Wait waits for the started command, forwarding every signal that arrives
// on sigs to its process group and enforcing the timeout.
func (c *Child) Wait(sigs <-chan os.Signal, start time.Time) Result {
	pid := c.cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()

	var timeout, kill <-chan time.Time
	if c.spec.Timeout > 0 {
		t := time.NewTimer(c.spec.Timeout - time.Since(start))
		defer t.Stop()
		timeout = t.C
	}
	res := Result{Pid: pid, Start: start}
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if c.tty && (sig == unix.SIGINT || sig == unix.SIGQUIT) {
				continue
			}
			c.signal(sig)
		case <-timeout:
			res.TimedOut = true
			c.signal(unix.SIGTERM)
			grace := c.spec.KillAfter
			if grace <= 0 {
				grace = DefaultKillAfter
			}
			k := time.NewTimer(grace)
			defer k.Stop()
			kill = k.C
		case <-kill:
			c.signal(unix.SIGKILL)
		case err := <-done:
			res.End = time.Now()
			res.Code, res.Signal = codeOf(c.cmd.ProcessState, err)
			if res.TimedOut {
				res.Code = ExitTimeout
			}
			return res
		}
	}
}

// signal signals the child's process group (the child alone on a
// terminal, or if the group is already gone).
func (c *Child) signal(s syscall.Signal) {
	pid := c.cmd.Process.Pid
	if c.tty || unix.Kill(-pid, s) != nil {
		_ = unix.Kill(pid, s)
	}
}

func codeOf(ps *os.ProcessState, err error) (int, syscall.Signal) {
	if ps == nil {
		return ExitFailure, 0
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return ps.ExitCode(), 0
	}
	switch {
	case ws.Exited():
		return ws.ExitStatus(), 0
	case ws.Signaled():
		return ExitSignalBase + int(ws.Signal()), ws.Signal()
	}
	return ExitFailure, 0
}

// Run prepares, starts and waits for spec in one call.
func Run(spec Spec, sigs <-chan os.Signal) (Result, error) {
	c, err := Prepare(spec)
	if err != nil {
		return Result{Code: ExitCode(err)}, err
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		return Result{Code: ExitCode(err)}, err
	}
	return c.Wait(sigs, start), nil
}
