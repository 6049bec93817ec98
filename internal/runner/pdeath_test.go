package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const pdeathHelperEnv = "RUNNER_PDEATH_HELPER"

// TestKillWithParentHelper is the wrapper of TestKillWithParent, run in a
// process of its own: it starts a command that writes its PID to the file
// $RUNNER_PDEATH_HELPER, with KillWithParent if the file's name says so,
// and waits for it. Run alone, it does nothing.
func TestKillWithParentHelper(t *testing.T) {
	pidf := os.Getenv(pdeathHelperEnv)
	if pidf == "" {
		return
	}
	c, err := Prepare(Spec{Argv: []string{"sh", "-c", `echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60`, "sh", pidf}})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	if filepath.Base(pidf) == "protected" {
		c.KillWithParent()
	}
	if err := c.Start(); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	c.Wait(nil, time.Now())
	os.Exit(0)
}

// A command started with KillWithParent dies with the wrapper, even when
// the wrapper is killed with SIGKILL; without it, the command runs on (the
// control, which shows the first check is not vacuous).
func TestKillWithParent(t *testing.T) {
	for _, c := range []struct {
		name    string
		survive bool
	}{{"protected", false}, {"unprotected", true}} {
		pidf := filepath.Join(t.TempDir(), c.name)
		w := exec.Command(os.Args[0], "-test.run=^TestKillWithParentHelper$")
		w.Env = append(os.Environ(), pdeathHelperEnv+"="+pidf)
		// A file, not a pipe: Wait would wait for the command that
		// survives to close a pipe.
		out, err := os.Create(pidf + ".out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		w.Stdout, w.Stderr = out, out
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		pid := 0
		for end := time.Now().Add(guardDeadline); pid == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidf); err == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
		if pid == 0 {
			_ = w.Process.Kill()
			_ = w.Wait()
			said, _ := os.ReadFile(out.Name())
			t.Fatalf("%s: the command did not start within %v; wrapper said %q", c.name, guardDeadline, said)
		}
		_ = w.Process.Kill()
		_ = w.Wait()
		gone := false
		for end := time.Now().Add(guardDeadline); !gone && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			gone = !alive(pid)
			if c.survive {
				break // the command is looked at once: it must still run
			}
		}
		if !gone {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if gone == c.survive {
			t.Errorf("%s: wrapper killed; command %d gone: %v, want %v", c.name, pid, gone, !c.survive)
		}
	}
}

// alive reports whether pid is a process that is not a zombie (a killed
// orphan stays a zombie until PID 1 reaps it, which some containers never
// do).
func alive(pid int) bool {
	return ProcessLive(pid)
}
