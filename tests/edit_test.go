package tests

// TestEditCommand: `cron-gate edit` end to end, through the real binaries
// on a pseudo-terminal, since it refuses to run without one. The editor is a shell script named by
// $EDITOR or $VISUAL; the test answers cron-gate's question through the
// terminal, after it has seen the question.

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
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ptyRun is cron-gate running on a pseudo-terminal.
type ptyRun struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer // everything the terminal showed
	read   chan struct{}
}

// startOnPTY starts cron-gate with args on a new pseudo-terminal (its
// controlling terminal, in a new session) with env.
func startOnPTY(t *testing.T, dir string, env []string, args ...string) *ptyRun {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the terminal: %v", err)
	}
	defer s.Close()
	p := &ptyRun{master: m, read: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(binDir, "cron-gate"), args...)
	p.cmd.Env, p.cmd.Dir = env, dir
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = s, s, s
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		m.Close()
		t.Fatal(err)
	}
	go func() {
		defer close(p.read)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil { // EIO once the last process on the terminal is gone
				return
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		m.Close()
	})
	return p
}

func (p *ptyRun) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitOutput waits until the terminal has shown want.
func (p *ptyRun) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !strings.Contains(p.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q within %v; it showed:\n%s", want, waitDeadline, p.output())
		}
		time.Sleep(pollInterval)
	}
}

// wait waits for cron-gate to exit and returns its exit code.
func (p *ptyRun) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(waitDeadline):
		p.cmd.Process.Kill()
		t.Fatalf("cron-gate edit still running after %v; the terminal showed:\n%s", waitDeadline, p.output())
	}
	select { // what it printed last
	case <-p.read:
	case <-time.After(waitDeadline):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestEditCommand(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	orig := "# cron-gate config: the comments stay\n[gates.a]\npaused = true # held\n\n[gates.b]\ninterval = \"1h\"\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Root keeps the file's owner: give it another one.
		if err := os.Chown(cfg, 4242, 4343); err != nil {
			t.Fatal(err)
		}
	}
	var before unix.Stat_t
	if err := unix.Stat(cfg, &before); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + binDir + ":/usr/bin:/bin",
		"HOME=" + dir,
		"TMPDIR=" + dir,
		"TERM=dumb",
		"CRON_GATE_STATE_DIR=" + filepath.Join(dir, "state"),
		"CRON_GATE_CACHE_DIR=off",
	}
	// The editor: a script that does what step file N says, N counting
	// its calls (step1.sh, step2.sh, ...).
	editor := filepath.Join(dir, "editor.sh")
	script := "#!/bin/sh\nn=$(cat " + dir + "/calls 2>/dev/null || echo 0); n=$((n+1)); echo $n >" + dir + "/calls\nexec sh " + dir + "/step$n.sh \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	steps := func(s ...string) {
		os.Remove(filepath.Join(dir, "calls"))
		for i, body := range s {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("step%d.sh", i+1)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 1. An invalid edit (a typo'd key), the error and the question; "e";
	// the second edit fixes it and resumes gate a; saved. $VISUAL wins
	// over $EDITOR, and is a shell command (an argument after the script).
	steps(`printf 'pausd = true\n' >>"$1"`,
		`sed -i -e '/^pausd/d' -e 's/^paused = true # held$/paused = false # held/' "$1"`)
	p := startOnPTY(t, dir, append(env, "VISUAL=sh "+editor, "EDITOR=false"), "--config", cfg, "edit")
	p.waitOutput(t, "what now? (e)dit again, e(x)it without saving [e/x]: ")
	if !strings.Contains(p.output(), "line 7: unknown key gates.b.pausd") {
		t.Errorf("the error does not name the line and key:\n%s", p.output())
	}
	if _, err := p.master.Write([]byte("e\n")); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d; the terminal showed:\n%s", code, p.output())
	}
	want := strings.Replace(orig, "paused = true # held", "paused = false # held", 1)
	if got, _ := os.ReadFile(cfg); string(got) != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(p.output(), "cron-gate: saved config "+cfg) {
		t.Errorf("it does not say it saved:\n%s", p.output())
	}
	var after unix.Stat_t
	if err := unix.Stat(cfg, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino == before.Ino {
		t.Errorf("the config was written in place, not replaced")
	}
	if after.Mode != before.Mode || after.Uid != before.Uid || after.Gid != before.Gid {
		t.Errorf("mode %o owner %d:%d became mode %o owner %d:%d", before.Mode, before.Uid, before.Gid, after.Mode, after.Uid, after.Gid)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "cron-gate-edit-*")); len(m) != 0 {
		t.Errorf("copies left behind: %v", m)
	}

	// 2. The edit holds the config lock: a resume started while the
	// editor is open waits for it, so neither change is lost (without the
	// lock, the resume would change the file under the edit, and the edit
	// would be refused as changed by someone else).
	if err := os.WriteFile(cfg, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	steps(`touch ` + dir + `/editing; while [ ! -e ` + dir + `/go ]; do sleep 0.01; done; printf '# added by the edit\n' >>"$1"`)
	p = startOnPTY(t, dir, append(env, "EDITOR="+editor), "--config", cfg, "edit")
	deadline := time.Now().Add(waitDeadline)
	for _, err := os.Stat(filepath.Join(dir, "editing")); err != nil; _, err = os.Stat(filepath.Join(dir, "editing")) {
		if time.Now().After(deadline) {
			t.Fatalf("the editor did not start; the terminal showed:\n%s", p.output())
		}
		time.Sleep(pollInterval)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitDeadline)
	defer cancel()
	resume := exec.CommandContext(ctx, filepath.Join(binDir, "cron-gate"), "--config", cfg, "resume", "a")
	resume.Env = env
	var resumeOut bytes.Buffer
	resume.Stdout, resume.Stderr = &resumeOut, &resumeOut
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the resume is blocked on the lock (it holds .config.lock
	// open) before letting the editor finish.
	lockPath := filepath.Join(dir, "state", ".config.lock")
	for !hasOpen(resume.Process.Pid, lockPath) {
		if time.Now().After(deadline) {
			t.Fatalf("the resume never opened %s", lockPath)
		}
		time.Sleep(pollInterval)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("edit: exit %d; the terminal showed:\n%s", code, p.output())
	}
	if err := resume.Wait(); err != nil {
		t.Fatalf("resume: %v: %s", err, resumeOut.String())
	}
	got, _ := os.ReadFile(cfg)
	if !strings.Contains(string(got), "# added by the edit\n") || !strings.Contains(string(got), "paused = false # held") {
		t.Errorf("a change was lost; config:\n%s", got)
	}

	// 3. A config that is not a regular file is refused at once, not
	// opened for ever (a FIFO) or read without end (/dev/zero).
	fifo := filepath.Join(dir, "fifo.toml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", zero: "a character device"} {
		steps(`echo the editor ran >` + dir + `/ran`)
		p = startOnPTY(t, dir, append(env, "EDITOR="+editor), "--config", path, "edit")
		if code := p.wait(t); code != 125 || !strings.Contains(p.output(), "is not a regular file but "+kind) {
			t.Errorf("edit of %s: exit %d; the terminal showed:\n%s", path, code, p.output())
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Errorf("edit of %s ran the editor", path)
		}
	}

	// 4. Not at a terminal: refused, nothing changed.
	cmd := exec.Command(filepath.Join(binDir, "cron-gate"), "--config", cfg, "edit")
	cmd.Env = append(env, "EDITOR="+editor)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), "needs a terminal") {
		t.Errorf("without a terminal: %v: %s", err, out)
	}
}

// hasOpen reports whether process pid has file open.
func hasOpen(pid int, file string) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == file {
			return true
		}
	}
	return false
}
