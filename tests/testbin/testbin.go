// Package testbin builds the project's real binaries once per test process,
// for the end-to-end, stress and fault tests.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
		// companion (cron-gate-etcd, withlock-etcd) next to itself.
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

// Tags are the build tags of a release (the Makefile's TAGS: none), so
// that the tests run the binaries an operator installs.
const Tags = ""

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

// OpenFIFOWriter opens the FIFO at path for writing once a reader has it
// open (a non-blocking open for writing fails with ENXIO until then),
// polling every millisecond for at most limit. ended reports whether the
// reader has already given up (returned, exited): that is an error, the
// reader having to wait for a writer.
func OpenFIFOWriter(path string, ended func() bool, limit time.Duration) (*os.File, error) {
	for deadline := time.Now().Add(limit); ; time.Sleep(time.Millisecond) {
		if ended() {
			return nil, fmt.Errorf("the reader of %s ended before any writer opened it", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, syscall.ENXIO):
			return nil, err
		case time.Now().After(deadline):
			return nil, fmt.Errorf("no reader opened %s within %v", path, limit)
		}
	}
}

// HostDirs are the directories the binaries use by default for root
// (gate.DefaultStateDir, the config cache, the etcd version cache's
// parent is per user): a test that runs a binary without pointing it
// elsewhere writes there, and the suite must leave the machine as it
// found it (a later package test refuses to run over an existing
// /var/cache/cron-gate, which dpkg -P would remove).
var HostDirs = []string{"/var/lib/cron-gate", "/var/cache/cron-gate"}

// WatchHostDirs notes which of HostDirs exist now; the function it
// returns reports, as one error naming them, those that exist then but
// did not before: a test wrote into the host's default dirs.
func WatchHostDirs() func() error {
	before := map[string]bool{}
	for _, d := range HostDirs {
		if _, err := os.Lstat(d); err == nil {
			before[d] = true
		}
	}
	return func() error {
		var made []string
		for _, d := range HostDirs {
			if _, err := os.Lstat(d); err == nil && !before[d] {
				made = append(made, d)
			}
		}
		if len(made) == 0 {
			return nil
		}
		return fmt.Errorf("a test wrote into the host's default dirs %v: give every binary it runs a state dir and CRON_GATE_CACHE_DIR of its own (a crontab line that trigger runs takes them from the crontab)", made)
	}
}
