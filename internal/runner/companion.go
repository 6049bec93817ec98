//go:build linux

package runner

// ExecCompanion hands a command line over to a companion binary by exec:
// withlock to withlock-etcd (etcd backend), cron-gate to cron-gate-etcd
// (a config with [etcd]). The
// exec keeps the PID, the process group and the signals a supervisor sends
// those of the process it started.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrCompanionNotFound is returned (wrapped) when the binary is neither next to
// this executable nor on PATH.
var ErrCompanionNotFound = errors.New("not installed")

// ExecCompanion replaces this process with binary, called argv0, with args and the
// current environment. It looks next to this executable first (so that a
// matching pair installed together is used), then on PATH. It returns
// only on failure. A binary that is this very file (a copy or link named
// so) is refused, since exec-ing it would loop.
//
// The binary next to this one is exec'd without a stat first: a directory
// that lets this user execute its files need not let it stat them.
func ExecCompanion(binary, argv0 string, args []string) error {
	argv := append([]string{argv0}, args...)
	self, _ := os.Executable()
	if self != "" {
		p := filepath.Join(filepath.Dir(self), binary)
		if err := execCompanion(p, self, argv); !errors.Is(err, syscall.ENOENT) {
			return err
		}
	}
	p, err := exec.LookPath(binary)
	if err != nil {
		return fmt.Errorf("%s is %w next to %s or on PATH", binary, ErrCompanionNotFound, filepath.Base(self))
	}
	return execCompanion(p, self, argv)
}

func execCompanion(path, self string, argv []string) error {
	if a, b := statOrNil(path), statOrNil(self); a != nil && b != nil && os.SameFile(a, b) {
		return fmt.Errorf("%s is this program itself, not %s", path, filepath.Base(path))
	}
	err := syscall.Exec(path, argv, os.Environ())
	if errors.Is(err, syscall.ENOENT) {
		return err
	}
	return fmt.Errorf("exec %s: %w", path, err)
}

func statOrNil(p string) os.FileInfo {
	if p == "" {
		return nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil
	}
	return st
}

// CompanionHint is the hint: line after ErrCompanionNotFound for binary:
// the etcd backend's binaries come in a package of their own.
func CompanionHint(binary string) string {
	if strings.HasSuffix(binary, "-etcd") {
		return "install " + binary + " next to the others: the cron-gate-etcd package, or make install (docs/install.md)"
	}
	return "install the binaries together: the cron-gate package, or make install (docs/install.md)"
}
