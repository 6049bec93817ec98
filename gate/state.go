//go:build linux

package gate

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/crongate/crongate/gate/journal"
)

// DefaultHistory is the number of records kept per gate before rotation
// (`history` when not set).
const DefaultHistory = journal.DefaultHistory

// DefaultLogMaxBytes bounds a gate's output log when log_output is on
// (`log_max_bytes` when not set).
const DefaultLogMaxBytes = journal.DefaultLogMaxBytes

// MaxLogMaxBytes is the largest accepted `log_max_bytes` (1 GiB): a run's
// output is held in memory until it ends (journal.MaxLogMaxBytes).
const MaxLogMaxBytes = journal.MaxLogMaxBytes

// StateDirFor returns the state directory: the config's state_dir, else
// $CRON_GATE_STATE_DIR, else DefaultStateDir for root, else
// $XDG_STATE_HOME/cron-gate or $HOME/.local/state/cron-gate, else
// /var/tmp/cron-gate-UID (cron may start jobs without HOME).
func StateDirFor(cfg *Config) string {
	if cfg != nil && cfg.StateDir != "" {
		return cfg.StateDir
	}
	if d := os.Getenv("CRON_GATE_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return DefaultStateDir
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d + "/cron-gate"
	}
	if h := os.Getenv("HOME"); h != "" {
		return h + "/.local/state/cron-gate"
	}
	return "/var/tmp/cron-gate-" + strconv.Itoa(os.Geteuid())
}

// ConfigLockPath is the lock file that serialises edits of the config
// (resume of a config pause); it lives in the state dir because the
// config's own directory (/etc) may not be writable.
func ConfigLockPath(stateDir string) string {
	return filepath.Join(stateDir, ".config.lock")
}
