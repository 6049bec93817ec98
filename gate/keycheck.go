//go:build linux

package gate

// The checks of the kinds of values (KindPath and KindPaths, KindURL and
// KindURLs, KindUnit, KindArgv): each returns why a value is refused, or "".

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crongate/crongate/internal/etcdendpoint"
	"github.com/crongate/crongate/internal/safetext"
)

// checkAbs returns why s is not an acceptable absolute path, or "".
func checkAbs(s string) string {
	switch {
	case s == "":
		return "is empty; write an absolute path starting with /"
	case strings.IndexByte(s, 0) >= 0:
		return safetext.Quote(s) + " contains a NUL byte; write a real path"
	case !filepath.IsAbs(s):
		return safetext.Quote(s) + " is not an absolute path; write the full path starting with /"
	}
	return ""
}

// checkURL returns why s is not an acceptable http(s) URL, or "".
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "is empty; write a URL like \"https://hc-ping.com/UUID\""
	case err != nil || strings.ContainsAny(s, " \t\r\n\x00"):
		return safetext.Quote(s) + " is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return safetext.Quote(s) + " is not an http:// or https:// URL"
	case u.Host == "" || u.Hostname() == "":
		return safetext.Quote(s) + " has no host"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return safetext.Quote(s) + " has a #fragment; remove it"
	}
	return ""
}

// checkEndpoint returns why s is not an etcd endpoint (etcdendpoint), or "".
func checkEndpoint(s string) string {
	if _, err := etcdendpoint.Check(s, "user", "password_file"); err != nil {
		return err.Error()
	}
	return ""
}

// checkUnit returns why s is not an acceptable systemd unit name, or "".
func checkUnit(s string) string {
	if s == "" {
		return "is empty; name a unit like \"blog-autopush.timer\""
	}
	if len(s) > 256 {
		return safetext.Quote(s) + " is too long for a unit name"
	}
	if s[0] == '-' {
		return safetext.Quote(s) + " starts with '-'"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(":_.@-\\", c) >= 0) {
			return safetext.Quote(s) + " is not a systemd unit name"
		}
	}
	if i := strings.LastIndexByte(s, '.'); i <= 0 || i == len(s)-1 {
		return safetext.Quote(s) + " has no unit type; write the full name, e.g. \"" + s + ".timer\""
	}
	return ""
}

// checkArgv returns why argv is not an acceptable command line, or "":
// a non-empty first word, no NUL bytes, and at least one word unless
// emptyOK. A nil argv is "not set" and acceptable.
func checkArgv(argv []string, emptyOK bool) string {
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
			return "element " + strconv.Itoa(i) + " contains a NUL byte"
		}
	}
	return ""
}
