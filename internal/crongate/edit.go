//go:build linux

package crongate

// `cron-gate edit`: visudo for the config. The file handling (lock, stable
// read, atomic replacement keeping owner and mode, the check that nobody
// else changed it) is gateconf.EditSession's; this file runs the editor and
// talks to the person.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/statefile"
)

// EditCmd is `cron-gate edit`.
type EditCmd struct{}

// editorCommand returns the editor to run: $VISUAL, else $EDITOR, else vi.
// The value is a shell command (run by /bin/sh with the file's path as its
// last argument, as git and crontab -e do), so "code --wait" and options
// with quotes work.
func editorCommand() string {
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return "vi"
}

// editSession is one `cron-gate edit`, with its terminal and signals
// injectable for tests.
type editSession struct {
	out    *safetext.Printer
	in     *bufio.Reader // the answers to the prompt (the terminal)
	prompt io.Writer     // where the prompt goes (stderr)
	sigs   chan os.Signal
	editor func(file string) error // runs the editor on file

	editorErr error // the last editor run's failure
}

// editConfig is `cron-gate edit`: path is --config (or $CRON_GATE_CONFIG),
// "" for the default.
func editConfig(path string, out *safetext.Printer, sigs chan os.Signal) int {
	if _, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err != nil {
		out.Errorf("edit runs an editor and needs a terminal on stdin; nothing was changed")
		out.Hintf("from a script, write the new config to a file beside it and rename it over the old one (atomically)")
		return runner.ExitFailure
	}
	ed := editorCommand()
	s := &editSession{
		out: out, in: bufio.NewReader(os.Stdin), prompt: os.Stderr, sigs: sigs,
		editor: func(file string) error {
			cmd := exec.Command("/bin/sh", "-c", ed+` "$@"`, ed, file)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("editor %s failed (%v)", safetext.Quote(ed), err)
			}
			return nil
		},
	}
	return s.run(path)
}

// run edits the config at path (see editConfig).
func (s *editSession) run(path string) int {
	// Long: an edit session's steps in their order: lock, private copy, editor, check, replace.
	path, _ = gate.ConfigPath(path)
	// The lock lives in the state dir, as SetPaused's does: that of the
	// config when it loads, else the default one (a broken config is
	// edited to be fixed, and nothing else can edit it meanwhile: every
	// other editor loads it first).
	var stateDir string
	if cfg, err := gateconf.Load(path, false); err == nil {
		stateDir = gate.StateDirFor(cfg)
	} else {
		stateDir = gate.StateDirFor(nil)
	}
	// Created by the safe walk (statefile.OpenDir: from directory
	// descriptors, never through another user's directory or symlink),
	// as a run creates it; BeginEdit then walks it again to its lock.
	sd, err := statefile.OpenDir(stateDir)
	if err != nil {
		s.out.Errorf("%s", safetext.Line(err.Error()))
		return runner.ExitFailure
	}
	sd.Close()
	sess, err := gateconf.BeginEdit(path, gate.ConfigLockPath(stateDir))
	if err != nil {
		s.out.Errorf("%v", err)
		return runner.ExitFailure
	}
	defer sess.Close()
	where := safetext.Where(path, 0)

	// A private copy: a directory only this user can enter, the file 0600
	// under the config's own name (editors pick their syntax by it).
	// MkdirTemp needs no safe walk: mkdir(2) of a fresh random name never
	// follows a symlink and fails if the name exists, and the new
	// directory is 0700.
	dir, err := os.MkdirTemp("", "cron-gate-edit-")
	if err != nil {
		s.out.Errorf("%s: cannot create a private directory for the copy: %v", where, safeopen.Cause(err))
		return runner.ExitFailure
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	file := filepath.Join(dir, filepath.Base(sess.Target))
	if err := writeNew(file, sess.Orig); err != nil {
		s.out.Errorf("%s: cannot write the copy %s: %v", where, safetext.QuotePath(file), err)
		return runner.ExitFailure
	}
	kept := func() {
		keep = true
		s.out.Errorf("your edit is kept in %s", safetext.QuotePath(file))
	}

	for {
		sig := s.runEditor(file)
		if sig != 0 {
			s.out.Errorf("%s: not saved: cron-gate received %s while the editor ran", where, unix.SignalName(sig))
			kept()
			return runner.ExitSignalBase + int(sig)
		}
		if err := s.editorErr; err != nil {
			s.editorErr = nil
			s.out.Errorf("%s: not saved: %v", where, err)
			return runner.ExitFailure
		}
		data, err := readCopy(file)
		if err != nil {
			s.out.Errorf("%s: not saved: the edited copy %s: %v", where, safetext.QuotePath(file), err)
			return runner.ExitFailure
		}
		if bytes.Equal(data, sess.Orig) {
			s.out.Donef("%s: no changes; nothing saved", where)
			return 0
		}
		err = sess.Check(data)
		if err == nil {
			if err := sess.Save(data); err != nil {
				s.out.Errorf("%v", err)
				kept()
				if errors.Is(err, gateconf.ErrConfigChanged) {
					s.out.Hintf("compare it with the config (diff %s %s), then run cron-gate edit again", safetext.QuotePath(path), safetext.QuotePath(file))
				}
				return runner.ExitFailure
			}
			s.out.Donef("saved %s", where)
			return 0
		}
		// visudo's choice: edit again, or leave without saving. An
		// invalid config is never saved.
		s.out.Errorf("%v", err)
		switch ans, sig := s.ask("what now? (e)dit again, e(x)it without saving [e/x]: "); {
		case sig != 0:
			s.out.Errorf("%s: not saved", where)
			return runner.ExitSignalBase + int(sig)
		case ans == "e":
			continue
		default:
			s.out.Errorf("%s: not saved; the config is as it was", where)
			return runner.ExitFailure
		}
	}
}

// runEditor runs the editor on file and returns the TERM or HUP received
// meanwhile (0 if none). INT and QUIT typed at the terminal reach the
// editor, which handles them; cron-gate ignores them meanwhile, as
// system(3) does. The editor's own failure is left in s.editorErr.
func (s *editSession) runEditor(file string) syscall.Signal {
	done := make(chan error, 1)
	go func() { done <- s.editor(file) }()
	var got syscall.Signal
	note := func(sig os.Signal) {
		if n, ok := sig.(syscall.Signal); ok && (n == unix.SIGTERM || n == unix.SIGHUP) && got == 0 {
			got = n
		}
	}
	for {
		select {
		case err := <-done:
			s.editorErr = err
			for { // and what arrived as it ended
				select {
				case sig := <-s.sigs:
					note(sig)
				default:
					return got
				}
			}
		case sig := <-s.sigs:
			note(sig)
		}
	}
}

// ask prints the prompt and reads one answer: "e", "x", or "x" at the end
// of input. A signal while waiting is returned instead.
func (s *editSession) ask(prompt string) (string, syscall.Signal) {
	for {
		fmt.Fprintf(s.prompt, "%s: %s", s.out.Prog, prompt)
		line := make(chan string, 1)
		go func() {
			l, err := s.in.ReadString('\n')
			if err != nil && l == "" {
				l = "x" // end of input: leave
			}
			line <- l
		}()
		select {
		case l := <-line:
			switch a := strings.ToLower(strings.TrimSpace(l)); a {
			case "e", "x":
				return a, 0
			}
		case sig := <-s.sigs:
			fmt.Fprintln(s.prompt)
			if n, ok := sig.(syscall.Signal); ok {
				return "", n
			}
			return "", unix.SIGTERM
		}
	}
}

// writeNew creates file (which must not exist) with data, mode 0600.
func writeNew(file string, data []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return safeopen.Cause(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readCopy reads the edited copy back: a regular file (the editor may
// have replaced it by a new one; the private directory is ours alone), at
// most gate.MaxConfigBytes.
func readCopy(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, safeopen.Cause(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, gate.MaxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > gate.MaxConfigBytes {
		return nil, fmt.Errorf("is larger than %d bytes", gate.MaxConfigBytes)
	}
	return data, nil
}
