//go:build linux

package withlock

import (
	"github.com/crongate/crongate/internal/runner"
)

// FastParse parses the common, well-formed command lines without kong
// (runner.FastParse, from CLI's own tags), so that a per-tick call does
// not pay for kong's reflective set-up (about 0.4 ms, most of withlock's
// own cost; see docs/benchmarks.md; withlock-etcd uses it too, for the
// etcd flags). On anything else it returns false and kong parses the
// line, with kong's help and error messages. FuzzFastParse checks that
// whenever it accepts, kong accepts too and fills in exactly the same
// values.
func FastParse(args []string, c *CLI) bool {
	*c = CLI{}
	return runner.FastParse(args, c, Vars())
}
