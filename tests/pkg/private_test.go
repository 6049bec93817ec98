//go:build pkg

package pkg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// The package tests never change the host: as root, TestMain runs the
// test binary again inside a mount namespace of its own (unshare -m,
// mounts private), where /usr, /etc and /var are overlays whose writes go
// to a tmpfs that vanishes with the namespace. dpkg -i, its database, the
// conffile, root's config cache and the purge all happen there; the
// host's /usr/bin, /var/lib/dpkg and /etc are not touched, and a
// cron-gate package installed on the host is purged inside the overlay
// first instead of making the test skip.

// privateEnv marks the test process running inside the namespace.
const privateEnv = "CRONGATE_PKG_PRIVATE"

// overlaid are the trees the package (and dpkg's database) writes to.
var overlaid = []string{"/usr", "/etc", "/var"}

// inPrivate reports whether this process runs in the private namespace.
func inPrivate() bool { return os.Getenv(privateEnv) != "" }

// rerunPrivate runs this test binary again, with its arguments, in a
// private mount namespace and returns its exit code. Without unshare(1)
// it returns -1: the tests run here, and TestDebInstall skips.
func rerunPrivate() int {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkg: unshare is not installed (apt-get install -y util-linux): TestDebInstall will skip")
		return -1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkg:", err)
		return 1
	}
	cmd := exec.Command(unshare, append([]string{"--mount", "--propagation", "private", "--", self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), privateEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// go test's timeout kills this process: the one inside goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "pkg: unshare:", err)
		return 1
	}
}

// overlayHost puts an overlay over each of overlaid, its writable layer
// in a tmpfs mounted at dir. Call it only inside the private namespace.
func overlayHost(dir string) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", dir, err)
	}
	for i, tree := range overlaid {
		upper := filepath.Join(dir, fmt.Sprint(i), "upper")
		wd := filepath.Join(dir, fmt.Sprint(i), "work")
		for _, d := range []string{upper, wd} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		opts := "lowerdir=" + tree + ",upperdir=" + upper + ",workdir=" + wd
		if err := syscall.Mount("overlay", tree, "overlay", 0, opts); err != nil {
			return fmt.Errorf("overlay on %s: %w", tree, err)
		}
	}
	return nil
}
