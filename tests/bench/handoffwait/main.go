// Command handoffwait is a bare waiter for the handoff benchmark
// (tests/bench/handoff.sh): the least a Go program can do to wait for a
// lock file held by another process and then run a command, to tell how
// much of withlock --wait's handoff is Go's and how much withlock's.
//
//	handoffwait -mode floor|park --lock-dir D --wait 30s --paths P -- CMD...
//
// (withlock's argv shape; --wait is ignored.) The lock file is
// D/sha256(P).lock, P taken as given (the benchmark passes a canonical
// path).
//
//   - floor: flock(2) blocking in the process itself, then os/exec with a
//     process group of its own, as withlock starts a command (and, as
//     withlock, the os package's one-off pidfd check done before the wait).
//   - park: the command's process is started before the wait, as this
//     program again with the lock's descriptor; it blocks in flock(2)
//     itself and then execs the command in place: no fork between the
//     release and the command. The parent keeps the descriptor, so the
//     lock outlives the exec (the child's copy is close-on-exec).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-parked" {
		parked(os.Args[2:])
	}
	if len(os.Args) < 11 || os.Args[1] != "-mode" || os.Args[9] != "--" {
		fmt.Fprintln(os.Stderr, "usage: handoffwait -mode floor|park --lock-dir D --wait T --paths P -- CMD...")
		os.Exit(2)
	}
	mode, dir, target, argv := os.Args[2], os.Args[4], os.Args[8], os.Args[10:]
	sum := sha256.Sum256([]byte(target))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:])+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoffwait:", err)
		os.Exit(125)
	}
	var cmd *exec.Cmd
	switch mode {
	case "floor":
		// The os package checks once, at the first start, that pidfds
		// work (a process of its own); withlock has it done before it
		// waits (runner.Warm), and so does this.
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Release()
		}
		for {
			if err = unix.Flock(int(f.Fd()), unix.LOCK_EX); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "handoffwait:", err)
			os.Exit(125)
		}
		cmd = exec.Command(argv[0], argv[1:]...)
	case "park":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "handoffwait:", err)
			os.Exit(125)
		}
		cmd = exec.Command(self, append([]string{"-parked"}, argv...)...)
		cmd.ExtraFiles = []*os.File{f} // fd 3
	default:
		fmt.Fprintln(os.Stderr, "handoffwait: unknown mode", mode)
		os.Exit(2)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "handoffwait:", err)
		os.Exit(125)
	}
}

// parked is the park mode's child: it waits for the lock on fd 3, then
// becomes the command.
func parked(argv []string) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		os.Exit(127)
	}
	for {
		if err = unix.Flock(3, unix.LOCK_EX); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		os.Exit(125)
	}
	unix.CloseOnExec(3)
	syscall.Exec(path, argv, os.Environ())
	os.Exit(126)
}
