//go:build linux

package withlock

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/runner"
)

// FastParse parses the common, well-formed command lines without kong, so
// that a per-tick call does not pay for kong's reflective set-up (about
// 0.4 ms, most of withlock's own cost; see docs/benchmarks.md). It accepts only
// long flags with "=" or a separate value, -p VALUE, and -v, -q, -0 on their
// own; on anything else — --help, --version, an unknown or repeated flag, a
// value it is not sure about — it returns false and kong parses the line,
// with kong's help and error messages. FuzzFastParse checks that whenever it
// accepts, kong accepts too and fills in exactly the same values.
func FastParse(args []string, c *CLI) bool {
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
			c.Wait, ok = duration(val)
		case "timeout":
			c.Timeout, ok = duration(val)
		case "kill-after":
			c.KillAfter, ok = duration(val)
		case "skip-code":
			c.SkipCode, ok = smallInt(val)
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

func duration(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	return d, err == nil
}
