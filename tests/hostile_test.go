package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestHostile runs the scripts in testdata/hostile: hostile input and
// hostile neighbours for withlock and cron-gate — paths with newlines,
// commas, bytes that are not UTF-8, 4096-byte paths and components over 255
// bytes; lock dirs and lock files planted as symlinks, FIFOs or hard links
// by another user; wrong permissions; gate names with path separators;
// huge --paths-from lists; an environment without HOME or PATH.
// docs/reliability.md lists what each script proves.
func TestHostile(t *testing.T) {
	t.Parallel() // the three script suites share one pool of -parallel slots
	testscript.Run(t, testscript.Params{
		Dir:       "testdata/hostile",
		Setup:     setupHostileScript,
		Cmds:      scriptCmds(),
		Condition: hostileCondition,
	})
}

// setupHostileScript is setupCronGateScript (nothing outside $WORK and
// $SHARED, a directory every user can traverse, is touched by default)
// plus SHAREDTMP inside $SHARED, world-writable with the sticky bit like
// /tmp, where the second user (nobody, uid 65534) plants its traps.
func setupHostileScript(env *testscript.Env) error {
	if err := setupCronGateScript(env); err != nil {
		return err
	}
	tmp := filepath.Join(env.Getenv("SHARED"), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	// Mkdir's mode is masked by the umask; chmod is not.
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		return err
	}
	env.Setenv("SHAREDTMP", tmp)
	// WITHLOCK_BIN: for scripts that run withlock under env -i.
	env.Setenv("WITHLOCK_BIN", filepath.Join(binDir, "withlock"))
	// A script that must use a fixed path outside $WORK (cron-gate's
	// fallback state dir /var/tmp/cron-gate-UID) lists it, one per line,
	// in $WORK/cleanup-paths; it is removed when the script ends, pass or
	// fail. Only /var/tmp/cron-gate-* paths are accepted.
	work := env.WorkDir
	env.Defer(func() {
		data, err := os.ReadFile(filepath.Join(work, "cleanup-paths"))
		if err != nil {
			return
		}
		for _, p := range strings.Fields(string(data)) {
			if strings.HasPrefix(p, "/var/tmp/cron-gate-") && !strings.Contains(p, "..") {
				os.RemoveAll(p)
			}
		}
	})
	return nil
}

// hostileCondition adds [seconduser] to the shared conditions: true when
// the tests run as root and setpriv(1) can run a command as nobody. Without
// it the second-user scripts skip, unless CI is set: there they are
// required and the condition is an error.
func hostileCondition(cond string) (bool, error) {
	if cond != "seconduser" {
		return scriptCondition(cond)
	}
	_, lookErr := exec.LookPath("setpriv")
	if os.Geteuid() == 0 && lookErr == nil {
		return true, nil
	}
	if os.Getenv("CI") != "" {
		return false, errors.New("the second-user tests need root and setpriv, and CI is set: they must run in CI")
	}
	return false, nil
}
