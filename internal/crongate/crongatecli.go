// Package crongate is what cron-gate's two binaries share of the
// command line, beyond the split at "--" that both wrappers share
// (runner.SplitCommand): the fast parser of the run forms found in
// crontabs. cron-gate (cmd/cron-gate, run on every cron tick)
// links only this, the gate package and the child runner; every other
// line, and a run whose config is not in the cache, is handed to
// cron-gate-full (cmd/cron-gate-full), which parses with kong and decodes
// the TOML. FuzzFastParse (cmd/cron-gate-full) holds FastParse to kong's
// result.
package crongate

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/duration"
	"github.com/crongate/crongate/internal/runner"
)

// FullBinary is the binary with kong's parser, the TOML decoder and every
// subcommand.
const FullBinary = "cron-gate-full"

// EtcdBinary is cron-gate-full with the etcd client, for configs whose
// pauses are shared ([etcd]).
const EtcdBinary = "cron-gate-etcd"

// TriggerEnv names the variable by which cron-gate trigger tells the
// cron-gate of the line it runs that the run is a manual one (a JSON
// object: the gate, the config, who asked, --force). cron-gate-full reads
// and removes it; cmd/cron-gate hands a line run with it set to
// cron-gate-full.
const TriggerEnv = "CRON_GATE_TRIGGER"

// RunArgs are the flags of `cron-gate [FLAGS] NAME -- COMMAND`.
type RunArgs struct {
	Config    string // --config, else $CRON_GATE_CONFIG, else ""
	Quiet     bool
	Verbose   bool
	Name      string
	Timeout   time.Duration
	KillAfter time.Duration
	OncePer   string        // --once-per: "" or one of gate.OncePers
	Jitter    time.Duration // --jitter: 0, or the gate's jitter for this line
}

// FastParse parses the run forms found in crontabs — `NAME`, with
// --config, --timeout, --kill-after, --once-per, --jitter, -q, -v — without kong, whose set-up
// costs more than the rest of a call. It declines (ok false) anything else,
// which is then left to kong.
func FastParse(args []string) (c RunArgs, ok bool) {
	c.KillAfter = runner.DefaultKillAfter
	if v, ok := os.LookupEnv("CRON_GATE_CONFIG"); ok {
		c.Config = v
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-q", "--quiet", "-v", "--verbose":
			if seen[a] {
				return c, false
			}
			seen[a] = true
			if a[len(a)-1] == 'q' || a == "--quiet" {
				c.Quiet = true
			} else {
				c.Verbose = true
			}
			continue
		}
		if !strings.HasPrefix(a, "-") {
			if c.Name != "" || a == "" || !utf8.ValidString(a) {
				return c, false
			}
			c.Name = a
			continue
		}
		if !strings.HasPrefix(a, "--") {
			return c, false
		}
		name, val, ok := strings.Cut(a[2:], "=")
		if !ok {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return c, false
			}
			i++
			val = args[i]
		}
		if val == "" || seen[name] || !utf8.ValidString(val) {
			return c, false
		}
		seen[name] = true
		var err error
		switch name {
		case "config":
			c.Config = val
		case "timeout":
			c.Timeout, err = duration.Parse(val)
		case "kill-after":
			c.KillAfter, err = duration.Parse(val)
		case "jitter":
			c.Jitter, err = duration.Parse(val)
		case "once-per":
			if !slices.Contains(gate.OncePers, val) {
				return c, false
			}
			c.OncePer = val
		default:
			return c, false
		}
		if err != nil {
			return c, false
		}
	}
	return c, c.Name != ""
}

// Check returns "" when a parsed run line is usable, else the usage error.
func (c *RunArgs) Check(command []string) string {
	if len(command) == 0 || command[0] == "" {
		return "empty command after --"
	}
	if c.Timeout < 0 || c.KillAfter < 0 || c.Jitter < 0 {
		return "--timeout, --kill-after and --jitter must not be negative"
	}
	if c.OncePer != "" && !slices.Contains(gate.OncePers, c.OncePer) {
		return "--once-per " + strconv.Quote(c.OncePer) + ` is not "` + strings.Join(gate.OncePers[:len(gate.OncePers)-1], `", "`) + `" or "` + gate.OncePers[len(gate.OncePers)-1] + `"`
	}
	return ""
}
