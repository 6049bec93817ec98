package gate

import (
	"os"
	"strconv"
	"testing"
)

// The state dir is the config's state_dir, else $CRON_GATE_STATE_DIR,
// else /var/lib/cron-gate for root, else $XDG_STATE_HOME/cron-gate, else
// $HOME/.local/state/cron-gate, else /var/tmp/cron-gate-UID
// (docs/config.md). The literals are written here on purpose. As root only
// the root branch can be seen in this process; hostile/no_env.txtar runs
// the binary as another user without HOME.
func TestStateDirFor(t *testing.T) {
	t.Setenv("CRON_GATE_STATE_DIR", "/srv/env-state")
	t.Setenv("XDG_STATE_HOME", "/srv/xdg")
	t.Setenv("HOME", "/srv/home")
	cfg := DefaultConfig()
	cfg.StateDir = "/srv/config-state"
	if got := StateDirFor(cfg); got != "/srv/config-state" {
		t.Errorf("with state_dir: %q, want the config's", got)
	}
	if got := StateDirFor(DefaultConfig()); got != "/srv/env-state" {
		t.Errorf("without state_dir: %q, want $CRON_GATE_STATE_DIR's", got)
	}
	os.Unsetenv("CRON_GATE_STATE_DIR")
	if os.Geteuid() == 0 {
		if got := StateDirFor(nil); got != "/var/lib/cron-gate" {
			t.Errorf("root: %q, want /var/lib/cron-gate", got)
		}
		return
	}
	for _, c := range []struct{ unset, want string }{
		{"", "/srv/xdg/cron-gate"},
		{"XDG_STATE_HOME", "/srv/home/.local/state/cron-gate"},
		{"HOME", "/var/tmp/cron-gate-" + strconv.Itoa(os.Geteuid())},
	} {
		if c.unset != "" {
			os.Unsetenv(c.unset)
		}
		if got := StateDirFor(nil); got != c.want {
			t.Errorf("without %s: %q, want %q", c.unset, got, c.want)
		}
	}
}
