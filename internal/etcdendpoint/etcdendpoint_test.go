package etcdendpoint

import (
	"strings"
	"testing"

	"github.com/crongate/crongate/internal/safetext"
)

func TestCheckPrefix(t *testing.T) {
	for p, want := range map[string]bool{"/withlock": true, "/a/b": true, "": false, "/": false, "x": false, "/x/": false, "/a\nb": false, "/a\x00": false} {
		err := CheckPrefix(p)
		if (err == nil) != want || err != nil && err.Error() != safetext.Quote(p)+" must start with / and not end with /" {
			t.Errorf("CheckPrefix(%q) = %v, want ok %v", p, err, want)
		}
	}
}

// Check's refusals quote the endpoint redacted and name where a secret goes.
func TestCheck(t *testing.T) {
	for e, want := range map[string]string{
		"a":                  `"a" is not an endpoint like http://HOST:2379, https://HOST:2379, HOST:2379 or unix:///PATH`,
		"http://u:pw@a:2379": `"http://%E2%80%A6@a:2379" carries a user or password: give --etcd-user and --password-file instead (a secret in a URL shows in messages)`,
		"u:pw@a:2379":        `"…@a:2379" carries a user or password: give --etcd-user and --password-file instead (a secret in a URL shows in messages)`,
	} {
		_, err := Check(e, "--etcd-user", "--password-file")
		if err == nil || err.Error() != want || strings.Contains(err.Error(), "pw") {
			t.Errorf("Check(%q) = %v\nwant %s", e, err, want)
		}
	}
}

func TestScheme(t *testing.T) {
	for e, want := range map[string]string{
		"http://a:2379": "http", "https://a:2379/": "https", "a:2379": "", "[::1]:2379": "",
		"unix:///run/etcd.sock": "unix", "unixs://etcd.sock": "unixs",
		"a": "!", "a:": "!", ":2379": "!", "unix://": "!", "ftp://a": "!", "http://a:2379/v3": "!",
		"http://a:2379?x=1": "!", "u:p@a:2379": "secret", "http://u:p@a:2379": "secret",
	} {
		got, err := Scheme(e)
		switch {
		case want == "secret" && err != ErrSecret, want == "!" && err != ErrForm:
			t.Errorf("Scheme(%q) = %q, %v; want a refusal (%s)", e, got, err, want)
		case want != "secret" && want != "!" && (err != nil || got != want):
			t.Errorf("Scheme(%q) = %q, %v; want %q", e, got, err, want)
		}
	}
}

// Any input: no panic; an accepted endpoint has no user in it, and a
// redacted one no password.
func FuzzScheme(f *testing.F) {
	for _, s := range []string{"http://a:2379", "a:2379", "unix:///x", "http://u:p@a:1", "u:p@a:1", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, e string) {
		if _, err := Scheme(e); err == nil && strings.Contains(e, "@") && !strings.HasPrefix(e, "unix") {
			t.Errorf("Scheme(%q) accepted a user", e)
		}
		if strings.Contains(e, ":s3cret@") && strings.Contains(Redact(e), "s3cret") {
			t.Errorf("Redact(%q) = %q shows the password", e, Redact(e))
		}
	})
}
