//go:build linux

// Package cfgtext words the config's error messages: the "config PATH
// line N" prefix, quoting that keeps a message on one line (package
// safetext does the escaping), and the checks of values that both the
// decoder (gateconf) and Config.Validate (gate) apply.
package cfgtext

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// CheckArgv returns why argv is not an acceptable command line, or "".
// A nil argv is "not set" and acceptable.
func CheckArgv(argv []string, emptyOK bool) string {
	if argv == nil {
		return ""
	}
	if len(argv) == 0 {
		if emptyOK {
			return ""
		}
		return "is empty; give the command and its arguments"
	}
	if argv[0] == "" {
		return "the command (first element) is empty"
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Sprintf("element %d contains a NUL byte", i)
		}
	}
	return ""
}

// CheckURL returns why s is not an acceptable http(s) URL, or "".
func CheckURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "is empty; write a URL like \"https://hc-ping.com/UUID\""
	case err != nil || strings.ContainsAny(s, " \t\r\n\x00"):
		return ShortQuote(s) + " is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return ShortQuote(s) + " is not an http:// or https:// URL"
	case u.Host == "" || u.Hostname() == "":
		return ShortQuote(s) + " has no host"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return ShortQuote(s) + " has a #fragment; remove it"
	}
	return ""
}

// CheckUnit returns why s is not an acceptable systemd unit name, or "".
func CheckUnit(s string) string {
	if s == "" {
		return "is empty; name a unit like \"blog-autopush.timer\""
	}
	if len(s) > 256 {
		return ShortQuote(s) + " is too long for a unit name"
	}
	if s[0] == '-' {
		return ShortQuote(s) + " starts with '-'"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(":_.@-\\", c) >= 0) {
			return ShortQuote(s) + " is not a systemd unit name"
		}
	}
	if i := strings.LastIndexByte(s, '.'); i <= 0 || i == len(s)-1 {
		return ShortQuote(s) + " has no unit type; write the full name, e.g. \"" + s + ".timer\""
	}
	return ""
}

// CheckAbs returns why s is not an acceptable absolute path, or "".
func CheckAbs(s string) string {
	switch {
	case s == "":
		return "is empty; write an absolute path starting with /"
	case strings.IndexByte(s, 0) >= 0:
		return ShortQuote(s) + " contains a NUL byte; write a real path"
	case !filepath.IsAbs(s):
		return ShortQuote(s) + " is not an absolute path; write the full path starting with /"
	}
	return ""
}

// Key formats a dotted TOML key the way it would be written in a file:
// bare parts as they are, others quoted (with Go escapes, so the result is
// always one printable line).
func Key(parts ...string) string {
	var b strings.Builder
	for i, s := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if IsBare(s) {
			b.WriteString(s)
		} else {
			b.WriteString(ShortQuote(s))
		}
	}
	return b.String()
}

func IsBare(s string) bool {
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

// ShortQuote quotes a value in a config message: safetext.Quote (Go
// escapes, always one printable line, the middle of long strings elided).
func ShortQuote(s string) string { return safetext.Quote(s) }

// OneLine makes a message from elsewhere (the TOML library, the OS) one
// line that is safe to print: safetext.Line.
func OneLine(s string) string { return safetext.Line(s) }

// UnwrapPath strips the *fs.PathError wrapper, whose op and path the
// caller's message already gives.
func UnwrapPath(err error) error { return safeopen.Cause(err) }
