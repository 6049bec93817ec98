//go:build linux

package runner

// SplitCommand splits a wrapper's arguments at the first "--": the
// wrapper's own flags before it, the command after it, untouched, and
// whether there was a "--" at all. Both wrappers (withlock, cron-gate) take
// their command this way; kong's passthrough would keep the "--" in the
// command and take an unknown flag for the command, so the split is done
// before any parser sees the line.
func SplitCommand(args []string) (flags, command []string, found bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}
