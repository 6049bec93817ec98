//go:build linux

// What cron-gate's run form is on the command line, beyond the split at
// "--" that both wrappers share (runner.SplitCommand): the run form's
// flags, defined once (RunLine: package crongate's kong structs embed
// GlobalFlags and RunFlags), and the fast parser of the run forms found in
// crontabs (FastParse, from those tags). A cron tick whose gate is in the
// config cache is parsed and run with this package and the child runner
// only (cmd/cron-gate); every other line, and a run whose config is not
// in the cache, goes to package crongate, which parses with kong and
// decodes the TOML. FuzzFastParse (internal/crongate) holds FastParse to
// kong's result.

package gate

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/runner"
)

// EtcdBinary is cron-gate with the etcd client, for configs whose pauses
// are shared ([etcd]); cron-gate execs it for them.
const EtcdBinary = "cron-gate-etcd"

// TriggerEnv names the variable by which cron-gate trigger tells the
// cron-gate of the line it runs that the run is a manual one (a JSON
// object: the gate, the config, who asked, --force). Package crongate
// reads and removes it; cmd/cron-gate never runs such a line from the
// cache.
const TriggerEnv = "CRON_GATE_TRIGGER"

// GlobalFlags are cron-gate's flags that every form of its line takes.
type GlobalFlags struct {
	Config string `env:"CRON_GATE_CONFIG" placeholder:"FILE" help:"Config file (default ${config}; a missing default is an empty config)."`
	runner.OutputFlags
}

// EmptyConfig returns a usage error when the flags before "--" give
// --config an empty value ("--config=" or "--config ”"): most likely a
// crontab's `--config "$CFG"` with CFG unset, which must not quietly mean
// the default config (where the gate may not be paused). An empty
// $CRON_GATE_CONFIG is unset, as for most variables.
func EmptyConfig(flagArgs []string) string {
	for i, a := range flagArgs {
		if a == "--config=" || a == "--config" && i+1 < len(flagArgs) && flagArgs[i+1] == "" {
			return "--config is empty (an unset variable?): name the config file, or leave --config out for the default"
		}
	}
	return ""
}

// RunFlags are the run form's own flags and its NAME.
type RunFlags struct {
	runner.TimeoutFlags
	OncePer string        `placeholder:"1h|1d|1w|slot" help:"Run at most once per period with success: 1h, 1d, 1w or slot (overrides the gate's once_per)."`
	Jitter  time.Duration `placeholder:"DURATION" help:"Wait a stable offset in [0, DURATION), from the gate's and host's names, before starting the command (overrides the gate's jitter); at most ${max_jitter}."`
	Chronic bool          `help:"Hold the command's output and write it out only when the run fails, with one line saying how it ended (as the gate's chronic)."`
	Name    string        `arg:"" help:"Gate name."`
}

// RunLine is `cron-gate [FLAGS] NAME` as the per-tick parser reads it:
// the same fields kong fills in package crongate (its CLI embeds
// GlobalFlags, its run command RunFlags), so each flag is defined once.
type RunLine struct {
	GlobalFlags
	RunFlags
}

// Vars are the values the flags' tags name, for kong and the fast parser
// alike (package crongate adds ${version}).
func Vars() map[string]string {
	v := runner.FlagVars("; the config's report_skips does the same", ", nor what pause, resume and edit did")
	v["config"] = DefaultConfigPath
	v["max_jitter"] = runner.FormatDuration(MaxJitter)
	return v
}

// FastParse parses the run forms found in crontabs from RunLine's tags
// (runner.FastParse), without kong, whose set-up costs more than the rest
// of a call. It declines (ok false) anything else, which is then left to
// kong.
func FastParse(args []string) (l RunLine, ok bool) {
	ok = runner.FastParse(args, &l, Vars())
	return l, ok
}

// Invocation is the run these flags ask for, of command: what the
// Invocation takes from the run form (the caller adds the config, the
// printer, the signals).
func (c *RunFlags) Invocation(command []string) Invocation {
	return Invocation{Gate: c.Name, Argv: command, Timeout: c.Timeout, KillAfter: c.KillAfter,
		OncePer: c.OncePer, Jitter: c.Jitter, Chronic: c.Chronic}
}

// Check returns "" when a parsed run line is usable, else the usage error.
func (c *RunFlags) Check(command []string) string {
	if len(command) == 0 || command[0] == "" {
		return "empty command after --"
	}
	if c.Timeout < 0 || c.KillAfter < 0 || c.Jitter < 0 {
		return "--timeout, --kill-after and --jitter must not be negative"
	}
	if c.OncePer != "" && !slices.Contains(OncePers, c.OncePer) {
		return "--once-per " + strconv.Quote(c.OncePer) + ` is not "` + strings.Join(OncePers[:len(OncePers)-1], `", "`) + `" or "` + OncePers[len(OncePers)-1] + `"`
	}
	return ""
}
