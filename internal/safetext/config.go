package safetext

// The wording of config messages, for every package that writes them
// (gate, gateconf, the cron-gate commands): the "config PATH line N"
// prefix (Where), keys written as in a file (TOMLKey), paths quoted only
// when a message would otherwise not be one unambiguous line (QuotePath),
// and the "did you mean" of a mistyped key or gate name (Closest,
// suggest.go). The checks of values are not here: they are the table of
// keys' (gate/keys.go).

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TOMLKey formats a dotted TOML key the way it would be written in a file:
// bare parts as they are, others quoted (with Go escapes, so the result is
// always one printable line).
func TOMLKey(parts ...string) string {
	var b strings.Builder
	for i, s := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if IsBareKey(s) {
			b.WriteString(s)
		} else {
			b.WriteString(Quote(s))
		}
	}
	return b.String()
}

// IsBareKey reports whether s can be written as a bare TOML key.
func IsBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Where is the prefix of every config error: "config PATH line N".
func Where(path string, line int) string {
	s := "config"
	if path != "" {
		s += " " + QuotePath(path)
	}
	if line > 0 {
		s += " line " + strconv.Itoa(line)
	}
	return s
}

// QuotePath returns path as is when it is plain printable text without
// spaces, else quoted, so that a message stays one unambiguous line.
func QuotePath(path string) string {
	if path == "" || !utf8.ValidString(path) {
		return strconv.Quote(path)
	}
	for _, r := range path {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(path)
		}
	}
	return path
}
