package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestCronGate runs the scripts in testdata/crongate against the real
// cron-gate binary (and withlock, where a script chains both) built by
// TestMain. Each script is one feature; see the comments in the scripts for
// what each phase proves.
func TestCronGate(t *testing.T) {
	t.Parallel() // the three script suites share one pool of -parallel slots
	testscript.Run(t, testscript.Params{
		Dir:       "testdata/crongate",
		Setup:     setupCronGateScript,
		Cmds:      scriptCmds(),
		Condition: scriptCondition,
	})
}

// setupCronGateScript is setupScript plus a safety net: every script sets
// CRON_GATE_CONFIG and CRON_GATE_STATE_DIR itself, but should one forget,
// cron-gate (running as root in CI) still never reads /etc/cron-gate or
// writes /var/lib/cron-gate, and withlock never uses /tmp/blog-file-locks.
// CRON_GATE_BIN is the absolute path of the binary, for scripts that run it
// with an empty environment (env -i), where PATH cannot find it. SHARED is
// a directory every user can traverse ($WORK is private to the test's
// user), for what a script runs as another user ($UNPRIV, setpriv); it is
// removed when the script ends.
func setupCronGateScript(env *testscript.Env) error {
	if err := setupScript(env); err != nil {
		return err
	}
	shared, err := os.MkdirTemp("", "e2e-shared-")
	if err != nil {
		return err
	}
	env.Defer(func() {
		// A script may leave a directory read-only.
		filepath.WalkDir(shared, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(shared)
	})
	if shared, err = filepath.EvalSymlinks(shared); err != nil {
		return err
	}
	// MkdirTemp's mode is 0700; chmod is not masked by the umask.
	if err := os.Chmod(shared, 0o755); err != nil {
		return err
	}
	env.Setenv("SHARED", shared)
	env.Setenv("CRON_GATE_CONFIG", filepath.Join(env.WorkDir, "config.toml"))
	env.Setenv("CRON_GATE_STATE_DIR", filepath.Join(env.WorkDir, "state"))
	env.Setenv("WITHLOCK_LOCK_DIR", filepath.Join(env.WorkDir, "locks"))
	env.Setenv("CRON_GATE_BIN", filepath.Join(binDir, "cron-gate"))
	// The config cache: private to the script (as root it would be
	// /var/cache/cron-gate otherwise), and it must be mode 0700 to be used.
	cache := filepath.Join(env.WorkDir, ".cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		return err
	}
	env.Setenv("CRON_GATE_CACHE_DIR", cache)
	return nil
}
