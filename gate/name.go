//go:build linux

package gate

import (
	"fmt"

	"github.com/crongate/crongate/internal/safetext"
)

// MaxNameLen is the longest gate name CheckName accepts, in bytes.
const MaxNameLen = 100

// reservedNames are the cron-gate subcommands. A gate may not be called like
// one, so that "cron-gate NAME ..." on a crontab line is never ambiguous.
var reservedNames = []string{
	"pause", "resume", "status", "check", "serve", "metrics", "help", "version", "run", "edit", "why", "trigger", "adopt",
}

// CheckName reports whether name may be used as a gate name.
//
// Gate names become directory names under the state directory and appear
// unquoted in crontab lines, so CheckName accepts exactly the names matching
// [A-Za-z0-9][A-Za-z0-9._-]{0,99}, except ".."-containing names and the
// reserved subcommand names (pause, resume, status, check, serve, metrics,
// help, version, run, edit, why, trigger, adopt; compared case-sensitively, as the command
// line is).
// In particular an accepted name is never empty, never contains '/', a
// control character, whitespace or a non-ASCII byte, never starts with '.'
// or '-', and is never "." or "..".
//
// CheckName never panics. A nil result means the name is safe to join to a
// directory path; a non-nil error is a single line that quotes the name
// (with %q, so hostile bytes are escaped) and says what to do.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("gate name is empty; give the gate a name like %q", "backup")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("gate name %s is %d bytes long; use at most %d", safetext.Quote(name), len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			return fmt.Errorf("gate name %q contains '/'; use only letters, digits, '.', '_' and '-'", name)
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("gate name %q contains a control character; use only letters, digits, '.', '_' and '-'", name)
		case c >= 0x80:
			return fmt.Errorf("gate name %q contains a non-ASCII byte; use only letters, digits, '.', '_' and '-'", name)
		case isNameByte(c):
			// fine
		default:
			return fmt.Errorf("gate name %q contains %q; use only letters, digits, '.', '_' and '-'", name, string(c))
		}
	}
	switch name[0] {
	case '.':
		return fmt.Errorf("gate name %q starts with '.'; start it with a letter or digit", name)
	case '-':
		return fmt.Errorf("gate name %q starts with '-'; start it with a letter or digit", name)
	case '_':
		return fmt.Errorf("gate name %q starts with '_'; start it with a letter or digit", name)
	}
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '.' && name[i+1] == '.' {
			return fmt.Errorf("gate name %q contains \"..\"; pick a name without it", name)
		}
	}
	for _, r := range reservedNames {
		if name == r {
			return fmt.Errorf("gate name %q is reserved for the %s subcommand; pick another", name, r)
		}
	}
	return nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}
