// Package testbin builds the project's real binaries once per test process,
// for the end-to-end, stress and fault tests.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

var (
	once sync.Once
	dir  string
	err  error
)

// Dir builds ./cmd/... and the test helpers under ./tests/... that have a
// main package (CGO_ENABLED=0, as the README's install does) into a
// temporary directory and returns it. Callers remove nothing: the directory
// lives under os.TempDir() for the test process and is removed by Cleanup.
func Dir() (string, error) {
	once.Do(func() {
		var root []byte
		root, err = exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		mod := filepath.Dir(strings.TrimSpace(string(root)))
		dir, err = os.MkdirTemp("", "crongate-bin-")
		if err != nil {
			return
		}
		// Tests run the binaries as other users too (setpriv): they must
		// be able to reach them, and a binary must be able to find its
		// companion (cron-gate-full, withlock-full) next to itself.
		if err = os.Chmod(dir, 0o755); err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-tags", Tags, "-o", dir+"/", "./cmd/...", "./tests/csworker")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("go build: %v\n%s", e, out)
		}
	})
	return dir, err
}

// Tags are the build tags of a release (the Makefile's TAGS), so that the
// tests run the binaries an operator installs.
const Tags = "grpcnotrace"

// Cleanup removes the build directory; call it from TestMain.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Module returns the module root directory.
func Module() string {
	root, _ := exec.Command("go", "env", "GOMOD").Output()
	return filepath.Dir(strings.TrimSpace(string(root)))
}

// CatchHangup makes the test process catch HUP and INT, whatever it
// inherited, so that the processes it starts begin with them at their
// default action: a test run under nohup (or by a runner that ignores
// HUP) would otherwise pass HUP ignored to every withlock and cron-gate it
// starts, which keep an inherited ignored HUP ignored (docs/withlock.md,
// Signals), and the tests that send it would wait in vain. Either signal
// sent to the test process itself still ends it (128+N).
func CatchHangup() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP, syscall.SIGINT)
	go func() {
		s := <-c
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
}

// CopyTo copies the built binary name (from Dir) into dir, executable:
// for a test that needs it alone, or next to a stand-in companion.
func CopyTo(name, dir string) error {
	bin, err := Dir()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(bin, name))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), data, 0o755)
}
