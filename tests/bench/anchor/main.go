// Command anchor is the per-call benchmark's floor: a bare os/exec runner
// that runs os.Args[1:] with stdio passed through and exits with the
// child's code, and does nothing else. withlock is measured against it.
package main

import (
	"errors"
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	} else if err != nil {
		os.Exit(127)
	}
}
