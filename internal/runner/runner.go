//go:build linux

// Package runner runs the wrapped command for withlock and cron-gate: one
// place that decides the child's process group, forwards signals, enforces a
// timeout, reads the command's output when the wrapper keeps it, and turns
// the way the child ended into an exit code.
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
//   - on timeout the group gets TERM; the wrapper then waits until no
//     process of the group is left, or until the grace period has passed
//     and KILL has been sent to the whole group — whether or not the child
//     itself is still there — and the killed processes are gone (Wait);
//   - the run ends when the child (the group's leader) exits; output that
//     processes it left behind still write to pipes the runner owns is read
//     for at most Spec.Drain more (DefaultDrain), then cut (Child.Drain);
//   - values in Spec.Env are appended after os.Environ() (or after
//     Spec.Environ, when set), so they win;
//   - with Spec.Credential the command runs as that user (groups, gid,
//     uid set in the child before it execs); with Spec.Dir it starts
//     there, or in / when that directory cannot be entered;
//   - Spec.ExtraFiles are inherited by the child as fds 3, 4, ... (this is
//     how withlock's locks outlive a SIGKILLed wrapper).
//
// It does not kill processes the command leaves behind when it exits
// before any timeout, nor processes that left its group (setsid).
package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultKillAfter is the grace between TERM and KILL when a timeout fires.
const DefaultKillAfter = 10 * time.Second

// DefaultDrain bounds how long the output of a command that has ended is
// still read from the pipes the runner owns (Spec.Stdout or Spec.Stderr
// not an *os.File): see Child.Wait.
const DefaultDrain = time.Second

// reapBound bounds the wait, after the timeout's KILL, for the processes
// of the group to be gone: a process in uninterruptible sleep (a hung NFS
// mount) cannot die, and the wrapper must end all the same.
const reapBound = 5 * time.Second

// groupPoll is how often the group is looked at while a timed-out command's
// processes are waited for.
const groupPoll = 20 * time.Millisecond

// defaultPath is used to find the command when PATH is unset, as execvp(3)
// does with confstr(_CS_PATH) on glibc.
const defaultPath = "/bin:/usr/bin"

// Forwarded lists the signals a wrapper passes on to the command.
var Forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT}

// Spec describes the command to run.
type Spec struct {
	Argv []string
	Env  []string // appended after os.Environ(), or after Environ when set
	// Environ, if not nil, is the command's whole environment instead of
	// os.Environ(); its PATH is the one the command is looked up on.
	Environ []string
	// Dir, if set, is the directory the command starts in. When it cannot
	// be entered (missing, not a directory, no search permission for the
	// command's user), the command starts in / instead, as cron starts a
	// job whose HOME it cannot enter outside it (cron-gate trigger).
	Dir string
	// Credential, if set, is the user the command runs as: its
	// supplementary groups, gid and uid, set in that order in the child
	// before exec, as cron does (setgid, initgroups, setuid). Only root
	// can give another user's.
	Credential *syscall.Credential
	ExtraFiles []*os.File // inherited as fd 3+i
	// Stdin, Stdout and Stderr: nil is the wrapper's own. An *os.File is
	// given to the command as it is. Any other writer gets a pipe the
	// runner owns and copies from (any other reader, one it copies into),
	// so that Wait decides when to stop reading: see Drain.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// OneOutput gives the command's stdout and stderr one pipe, copied to
	// Stdout (which must not be a file; Stderr is not used), so that
	// their order is kept, as when both go to one file: for a wrapper
	// whose own stdout and stderr are one file (SameFile), as under cron.
	OneOutput bool
	Timeout   time.Duration
	KillAfter time.Duration // 0: DefaultKillAfter
	// Drain bounds how long the runner still reads a pipe it owns after
	// the command has ended (0: DefaultDrain). A process the command left
	// behind can hold the pipe open for ever; its output past the bound is
	// not read, and Child.Drain says so.
	Drain time.Duration
}

// Result tells how the command ended.
type Result struct {
	Code     int            // what the wrapper should exit with
	Pid      int            // 0 if it never started
	Signal   syscall.Signal // non-zero if the command died of a signal
	TimedOut bool
	Start    time.Time
	// End is when the command ended: when the child exited, or, after a
	// timeout, when its group was found empty or had been killed if that
	// came later. It does not include the drain of the output
	// (Child.Drain).
	End time.Time
}

// Child is a command resolved and ready to start.
type Child struct {
	spec  Spec
	cmd   *exec.Cmd
	tty   bool       // stdin is a terminal: no process group of its own
	pipes []*pipe    // the output pipes the runner owns, once started
	end   time.Time  // the command's end, once Wait has returned
	close []*os.File // the command's ends of the pipes, closed after Start
}

// pipe is one output pipe the runner owns: the command writes to its
// other end, copy reads r into dst.
type pipe struct {
	r    *os.File
	dst  io.Writer
	done chan struct{} // closed when the copy has ended
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

// Warm does, ahead of time, the one-off work of the first Start that
// does not depend on the command: the os package's check that pidfds
// work, which starts and reaps a process of its own. A caller that waits
// before it starts the command (withlock --wait) calls it before waiting,
// so that the check is not paid between a release and the command's
// start. Later calls do nothing.
func Warm() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}

// Prepare resolves the command on PATH without running it, so that a missing
// command is reported before any lock is taken.
func Prepare(spec Spec) (*Child, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("no command given")
	}
	name := spec.Argv[0]
	base := spec.Environ
	if base == nil {
		base = os.Environ()
	}
	path, err := lookPath(name, base)
	if err != nil {
		return nil, classify(name, err)
	}
	cmd := &exec.Cmd{Path: path, Args: spec.Argv, Dir: spec.Dir}
	cmd.Env = append(append([]string{}, base...), spec.Env...)
	cmd.ExtraFiles = spec.ExtraFiles
	// The wrapper's own streams unless the caller gives others; a reader
	// or writer that is not a file gets a pipe at Start.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if f, ok := spec.Stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	if f, ok := spec.Stdout.(*os.File); ok {
		cmd.Stdout = f
	}
	if f, ok := spec.Stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	c := &Child{spec: spec, cmd: cmd}
	// Under cron (no terminal) the command gets a process group of its
	// own, so that a timeout or a forwarded signal reaches everything it
	// started. On a terminal it stays in the wrapper's group, which is the
	// terminal's foreground group: a background group would be stopped by
	// SIGTTIN at its first read. The terminal then sends ^C and ^\ to the
	// command itself, so INT and QUIT are not forwarded a second time.
	c.tty = isTerminal(cmd.Stdin) && (spec.Stdin == nil || cmd.Stdin == spec.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !c.tty, Credential: spec.Credential}
	return c, nil
}

// envPath is the value of PATH in env, and whether it is set.
func envPath(env []string) (string, bool) {
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true // the last one wins, as in os/exec
		}
	}
	return path, ok
}

// lookPath is exec.LookPath on env's PATH, with execvp's default search
// path when PATH is unset (cron may start us with an empty environment).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	path, ok := envPath(env)
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

// dirError tells whether a failed start may be the child's chdir to
// Spec.Dir failing (the errors chdir(2) gives a user who cannot enter it).
func dirError(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTDIR) ||
		errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENAMETOOLONG)
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

// Start starts the command. Errors are *StartError. It disarms the guard
// (guard.go) in the same critical section as the fork: a signal from now
// on is forwarded to the command by Wait.
func (c *Child) Start() error {
	if err := c.openPipes(); err != nil {
		c.closePipes()
		return &StartError{Argv0: c.spec.Argv[0], Code: ExitFailure, Err: err}
	}
	err := startDisarming(c.cmd.Start)
	if err != nil && c.cmd.Dir != "" && c.cmd.Dir != "/" && dirError(err) {
		// Spec.Dir could not be entered (or the command could not be
		// executed: then it fails in / again, with the same error).
		// A Cmd cannot be started twice: a copy starts in /.
		retry := &exec.Cmd{Path: c.cmd.Path, Args: c.cmd.Args, Env: c.cmd.Env, Dir: "/",
			Stdin: c.cmd.Stdin, Stdout: c.cmd.Stdout, Stderr: c.cmd.Stderr,
			ExtraFiles: c.cmd.ExtraFiles, SysProcAttr: c.cmd.SysProcAttr}
		c.cmd = retry
		err = startDisarming(c.cmd.Start)
	}
	// The command's ends of the pipes belong to it now (or to nobody):
	// the copies must see end of file when the last writer is gone.
	for _, f := range c.close {
		f.Close()
	}
	c.close = nil
	if err != nil {
		c.closePipes()
		return classify(c.spec.Argv[0], err)
	}
	for _, p := range c.pipes {
		go func() {
			defer close(p.done)
			// An error (the destination refusing, or the read end
			// closed by a cut drain) ends the copy; there is nobody to
			// tell but Result.OutputCut.
			_, _ = io.Copy(p.dst, p.r)
		}()
	}
	return nil
}

// openPipes makes the pipes for a Spec.Stdin, Stdout or Stderr that is
// not a file.
func (c *Child) openPipes() error {
	if r := c.spec.Stdin; r != nil && c.cmd.Stdin != r {
		pr, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		c.close = append(c.close, pr)
		c.cmd.Stdin = pr
		// Never waited for: the command may not read all of it, and a
		// reader that blocks must not hold the wrapper.
		go func() {
			_, _ = io.Copy(pw, r)
			pw.Close()
		}()
	}
	for _, out := range []struct {
		w   io.Writer
		set *io.Writer
	}{{c.spec.Stdout, &c.cmd.Stdout}, {c.spec.Stderr, &c.cmd.Stderr}} {
		if out.w == nil || *out.set == out.w {
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		c.close = append(c.close, pw)
		c.pipes = append(c.pipes, &pipe{r: pr, dst: out.w, done: make(chan struct{})})
		*out.set = pw
		if c.spec.OneOutput {
			c.cmd.Stderr = pw
			break
		}
	}
	return nil
}

// closePipes closes the runner's ends of the output pipes.
func (c *Child) closePipes() {
	for _, f := range c.close {
		f.Close()
	}
	c.close = nil
	for _, p := range c.pipes {
		p.r.Close()
	}
}

// Pid is the child's process ID once started.
func (c *Child) Pid() int {
	if c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Wait waits for the started command, forwarding every signal that arrives
// on sigs to its process group and enforcing the timeout. Call Drain after
// it when Spec.Stdout or Stderr was not a file.
//
// The run ends when the child exits, at once: processes it left behind in
// its group are not waited for (they may be daemons it means to leave).
// After a timeout it is different: the group got TERM, and the run ends
// only when no process of the group is left (zombies, which hold no
// files and no locks, do not count), or when KillAfter has passed; then
// KILL goes to the whole group, whether or not the child is still there,
// and Wait returns once the killed processes are gone (at most reapBound
// later, for one that cannot die). So when a timed-out withlock exits, no
// process of the command's group holds its locks any more. A process that
// left the group (setsid) is beyond reach, as it is for a terminal's ^C.
// On a terminal the command has no group of its own (see Prepare): the
// timeout's TERM and KILL go to the child alone and the run ends when it
// exits.
//
// Wait does not wait for the output pipes the runner owns: see Drain.
func (c *Child) Wait(sigs <-chan os.Signal, start time.Time) Result {
	pid := c.cmd.Process.Pid
	type exit struct {
		ps  *os.ProcessState
		err error
	}
	exited := make(chan exit, 1)
	go func() {
		ps, err := c.cmd.Process.Wait()
		exited <- exit{ps, err}
	}()

	var timeout, kill, poll <-chan time.Time
	if c.spec.Timeout > 0 {
		t := time.NewTimer(c.spec.Timeout - time.Since(start))
		defer t.Stop()
		timeout = t.C
	}
	res := Result{Pid: pid, Start: start}
	var (
		leaderGone bool
		killedAt   time.Time
	)
	for {
		if leaderGone {
			// The run ends now, unless a timeout must first clear the
			// group (see above).
			if !res.TimedOut || c.tty || !c.groupAlive() {
				break
			}
			if !killedAt.IsZero() && time.Since(killedAt) > reapBound {
				break
			}
			if poll == nil {
				t := time.NewTicker(groupPoll)
				defer t.Stop()
				poll = t.C
			}
		}
		select {
		case s := <-sigs:
			sig, ok := s.(syscall.Signal)
			if !ok || c.tty && (sig == unix.SIGINT || sig == unix.SIGQUIT) {
				continue
			}
			c.signal(sig, leaderGone)
		case <-timeout:
			timeout = nil
			res.TimedOut = true
			c.signal(unix.SIGTERM, leaderGone)
			grace := c.spec.KillAfter
			if grace <= 0 {
				grace = DefaultKillAfter
			}
			k := time.NewTimer(grace)
			defer k.Stop()
			kill = k.C
		case <-kill:
			kill = nil
			c.signal(unix.SIGKILL, leaderGone)
			killedAt = time.Now()
		case e := <-exited:
			exited = nil
			leaderGone = true
			res.End = time.Now()
			res.Code, res.Signal = codeOf(e.ps, e.err)
			if !res.TimedOut {
				// Ended before the deadline: the timeout no longer
				// applies (nor does a KILL to processes left behind).
				timeout, kill = nil, nil
			}
		case <-poll:
		}
	}
	if res.TimedOut {
		// The timed-out command ended when its group did.
		res.Code, res.End = ExitTimeout, time.Now()
	}
	c.end = res.End
	commandEnded()
	return res
}

// Drain ends the copies from the output pipes the runner owns (a
// Spec.Stdout or Stderr that is not a file); call it after Wait. They get
// until Spec.Drain after the command's end (Result.End) to reach end of
// file, which they do at once unless a process the command left behind
// still holds a pipe (or the destination stopped taking data). Then the
// read ends are closed and Drain reports the output cut: a process that
// writes later gets EPIPE, as it would once the wrapper had exited. A
// copy blocked writing to its destination is left behind: it cannot hold
// the wrapper. Without such pipes Drain returns false at once.
func (c *Child) Drain() (cut bool) {
	if len(c.pipes) == 0 {
		return false
	}
	d := c.spec.Drain
	if d <= 0 {
		d = DefaultDrain
	}
	t := time.NewTimer(time.Until(c.end.Add(d)))
	defer t.Stop()
	for _, p := range c.pipes {
		select {
		case <-p.done:
		case <-t.C:
			for _, p := range c.pipes {
				p.r.Close()
			}
			return true
		}
	}
	for _, p := range c.pipes {
		p.r.Close()
	}
	return false
}

// signal signals the child's process group. On a terminal (no group of
// its own) it signals the child alone, and so it does, while the child has
// not been reaped, if the group cannot be signalled. Once the child has
// been reaped (leaderGone) its PID may be reused, so only the group is
// signalled: the group's ID stays reserved as long as one member is left.
func (c *Child) signal(s syscall.Signal, leaderGone bool) {
	pid := c.cmd.Process.Pid
	if c.tty {
		if !leaderGone {
			_ = unix.Kill(pid, s)
		}
		return
	}
	if unix.Kill(-pid, s) != nil && !leaderGone {
		_ = unix.Kill(pid, s)
	}
}

// groupAlive reports whether a process of the child's group is still
// there and not a zombie. A zombie has closed its files (so it holds no
// lock) and may never be reaped when PID 1 does not reap orphans, so it
// does not count. The cheap kill(-pgid, 0) answers the common case; only
// when it finds the group is /proc searched for a live member.
func (c *Child) groupAlive() bool {
	pgid := c.cmd.Process.Pid
	if err := unix.Kill(-pgid, 0); err == unix.ESRCH {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: keep waiting, KILL and reapBound end it
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadProcStat(pid); err == nil && st.Pgrp == pgid && st.State != 'Z' && st.State != 'X' {
			return true
		}
	}
	return false
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

// Run prepares, starts and waits for spec in one call, and drains its
// output (Child.Drain).
func Run(spec Spec, sigs <-chan os.Signal) (Result, error) {
	c, err := Prepare(spec)
	if err != nil {
		return Result{Code: ExitCode(err)}, err
	}
	start := time.Now()
	if err := c.Start(); err != nil {
		return Result{Code: ExitCode(err)}, err
	}
	res := c.Wait(sigs, start)
	c.Drain()
	return res, nil
}
