// Package etcdendpoint holds the one rule for the form of an etcd
// endpoint and of a key prefix, and their messages, shared by
// withlock-etcd's flags and cron-gate's [etcd] config (which the lean
// cron-gate checks without linking network code): etcdctl's forms,
// http://HOST:PORT, https://HOST:PORT, HOST:PORT, unix://PATH and
// unixs://PATH, and no user or password in one (a secret there would show
// in every message naming it); TLS options only with TLS endpoints; a
// prefix that starts with "/" and does not end with one.
package etcdendpoint

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/crongate/crongate/internal/safetext"
)

// The reasons Scheme refuses an endpoint.
var (
	ErrForm   = errors.New("not an endpoint like http://HOST:2379, https://HOST:2379, HOST:2379 or unix:///PATH")
	ErrSecret = errors.New("carries a user or password")
)

// Scheme checks e's form and returns its scheme ("" for HOST:PORT).
func Scheme(e string) (string, error) {
	scheme, rest, hasScheme := strings.Cut(e, "://")
	switch {
	case !hasScheme:
		if strings.Contains(e, "@") {
			return "", ErrSecret
		}
		u, err := url.Parse("//" + e)
		if err != nil || u.Hostname() == "" || u.Port() == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(e, "/?# ") {
			return "", ErrForm
		}
		return "", nil
	case scheme == "unix" || scheme == "unixs":
		if rest == "" || strings.ContainsRune(rest, 0) {
			return "", ErrForm
		}
		return scheme, nil
	case scheme != "http" && scheme != "https":
		return "", ErrForm
	}
	u, err := url.Parse(e)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "", ErrForm
	case u.User != nil:
		return "", ErrSecret
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", ErrForm
	}
	return scheme, nil
}

// Redact keeps a URL's scheme and host only, for a message about an
// endpoint that may hold a secret.
func Redact(e string) string {
	if u, err := url.Parse(e); err == nil && u.User != nil {
		u.User = url.User("…")
		return u.String()
	}
	if i := strings.LastIndexByte(e, '@'); i >= 0 {
		return "…" + e[i:]
	}
	return e
}

// Check checks one endpoint's form (Scheme) and words its refusal for
// people, the endpoint quoted and redacted: user and passwordFile name
// the options a user and password go in instead ("--etcd-user" and
// "--password-file"; "user" and "password_file"). The error wraps
// ErrForm or ErrSecret.
func Check(e, user, passwordFile string) (scheme string, err error) {
	scheme, err = Scheme(e)
	switch {
	case errors.Is(err, ErrSecret):
		return "", fmt.Errorf("%s %w: give %s and %s instead (a secret in a URL shows in messages)", safetext.Quote(Redact(e)), err, user, passwordFile)
	case err != nil:
		return "", fmt.Errorf("%s is %w", safetext.Quote(Redact(e)), err)
	}
	return scheme, nil
}

// CheckTLS refuses an endpoint of scheme (Scheme's) that would drop TLS
// silently when TLS options are given: http:// and unix://. tlsOptions
// names them ("--ca-file, --cert-file, --key-file and --server-name").
func CheckTLS(e, scheme, tlsOptions string) error {
	if scheme == "http" || scheme == "unix" {
		return fmt.Errorf("%s need TLS endpoints: %s is %s://; give https://, unixs:// or HOST:PORT", tlsOptions, safetext.Quote(Redact(e)), scheme)
	}
	return nil
}

// ErrPrefix is wrapped by CheckPrefix's refusals.
var ErrPrefix = errors.New("must start with / and not end with /")

// CheckPrefix returns nil when p can be a key prefix: it starts with "/"
// and does not end with "/", so that one deployment's prefix is never a
// prefix of another's keys by accident, and it has no NUL or line end
// (it is named in messages). Else an error wrapping ErrPrefix that quotes
// p; the caller names the option it came from.
func CheckPrefix(p string) error {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "\x00\n") {
		return fmt.Errorf("%s %w", safetext.Quote(p), ErrPrefix)
	}
	return nil
}
