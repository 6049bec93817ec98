//go:build linux

package withlock

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/duration"
	"github.com/crongate/crongate/internal/runner"
)

// FastParse parses the common, well-formed command lines without kong, so
// that a per-tick call does not pay for kong's reflective set-up (about
// 0.4 ms, most of withlock's own cost; see docs/benchmarks.md; withlock-etcd
// uses it too, for the etcd flags). It accepts only
// long flags with "=" or a separate value, -p VALUE, and -v, -q, -0 on their
// own; on anything else — --help, --version, an unknown or repeated flag, a
// value it is not sure about — it returns false and kong parses the line,
// with kong's help and error messages. FuzzFastParse checks that whenever it
// accepts, kong accepts too and fills in exactly the same values.
func FastParse(args []string, c *CLI) bool {
	// Long: one pass over argv with a case per flag, the shape FuzzFastParse holds to kong.
	*c = CLI{SkipCode: runner.ExitSkip, KillAfter: runner.DefaultKillAfter, LockDir: DefaultLockDir}
	if v, ok := os.LookupEnv("WITHLOCK_LOCK_DIR"); ok {
		c.LockDir = v
	}
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-v", "--verbose":
			if c.Verbose {
				return false
			}
			c.Verbose = true
			continue
		case "-q", "--quiet":
			if c.Quiet {
				return false
			}
			c.Quiet = true
			continue
		case "-0", "--null":
			if c.Null {
				return false
			}
			c.Null = true
			continue
		case "--first-of":
			if c.FirstOf {
				return false
			}
			c.FirstOf = true
			continue
		}
		var name, val string
		switch {
		case a == "-p":
			name = "paths"
		case strings.HasPrefix(a, "--"):
			name = a[2:]
			if k, v, ok := strings.Cut(name, "="); ok {
				name, val = k, v
				goto have
			}
		default:
			return false
		}
		if i+1 >= len(args) || (strings.HasPrefix(args[i+1], "-") && args[i+1] != "-") {
			return false
		}
		i++
		val = args[i]
	have:
		if val == "" {
			return false
		}
		switch name {
		case "paths":
			c.Paths = append(c.Paths, val)
			continue
		case "slots":
			n, ok := smallInt(val)
			if !ok {
				return false
			}
			c.Slots = append(c.Slots, n)
			continue
		case "slot-file":
			c.SlotFile = append(c.SlotFile, val)
			continue
		case "endpoints":
			// kong splits on commas, honouring "\," escapes, and reads
			// a piece that starts with "-" its own way; a list it might
			// split otherwise, or with an empty entry, is left to it.
			for _, e := range strings.Split(val, ",") {
				if e == "" || strings.HasPrefix(e, "-") || strings.Contains(e, `\`) {
					return false
				}
				c.Endpoints = append(c.Endpoints, e)
			}
			continue
		}
		if seen[name] {
			return false
		}
		seen[name] = true
		var ok bool
		switch name {
		case "paths-from":
			c.PathsFrom, ok = val, true
		case "candidates-from":
			c.CandidatesFrom, ok = val, true
		case "lock-dir":
			c.LockDir, ok = val, true
		case "wait":
			c.Wait, ok = parseDuration(val)
		case "timeout":
			c.Timeout, ok = parseDuration(val)
		case "kill-after":
			c.KillAfter, ok = parseDuration(val)
		case "skip-code":
			c.SkipCode, ok = smallInt(val)
		case "ttl":
			c.TTL, ok = parseDuration(val)
		case "backend":
			c.Backend, ok = val, true
		case "key-root":
			c.KeyRoot, ok = val, true
		case "key-prefix":
			c.KeyPrefix, ok = val, true
		case "on-coordinator-down":
			c.OnCoordinatorDown, ok = val, true
		case "lock-delay":
			c.LockDelay, ok = val, true
		case "ca-file":
			c.CAFile, ok = val, true
		case "cert-file":
			c.CertFile, ok = val, true
		case "key-file":
			c.KeyFile, ok = val, true
		case "server-name":
			c.ServerName, ok = val, true
		case "etcd-user":
			c.EtcdUser, ok = val, true
		case "password-file":
			c.PasswordFile, ok = val, true
		}
		if !ok {
			return false
		}
	}
	return true
}

// smallInt accepts plain decimal numbers only: kong reads "010" as octal
// and "0x10" as hex, and those cases are left to kong.
func smallInt(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func parseDuration(s string) (time.Duration, bool) {
	d, err := duration.Parse(s)
	return d, err == nil
}
