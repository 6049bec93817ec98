package etcdclient

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		ok       bool
	}{
		{nil, []string{DefaultEndpoint}, true},
		{[]string{"http://a:2379", "http://b:2379"}, []string{"http://a:2379", "http://b:2379"}, true},
		{[]string{"http://a:2379", ""}, nil, false},
	} {
		got, err := Endpoints(c.in, "--endpoints")
		if ok := err == nil; ok != c.ok || !ok && err.Error() != "--endpoints has an empty entry (stray comma?)" || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Endpoints(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// New does not contact the cluster: a client for an address nobody
// listens on is created, and closes.
func TestNewIsLazy(t *testing.T) {
	cli, err := New([]string{"http://127.0.0.1:1"}, 0, Security{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// The minimum safe versions: etcd issue #15247's fix is in 3.4.31, 3.5.13
// and 3.6.0.
func TestSafeVersion(t *testing.T) {
	for v, want := range map[string][2]bool{
		"3.4.23": {false, true}, "3.4.30": {false, true}, "3.4.31": {true, true}, "3.4.40": {true, true},
		"3.5.12": {false, true}, "3.5.13": {true, true}, "3.6.0": {true, true}, "3.6.0-rc.1": {true, true},
		"3.7.3": {true, true}, "3.3.27": {false, true}, "4.0.0": {true, true}, "2.3.8": {false, true},
		"": {false, false}, "3.4": {false, false}, "3.4.x": {false, false}, "v3.4.31": {false, false}, "3.4.31 ": {false, false},
	} {
		safe, known := SafeVersion(v)
		if [2]bool{safe, known} != want {
			t.Errorf("SafeVersion(%q) = %v, %v; want %v", v, safe, known, want)
		}
	}
}

// FuzzSafeVersion: a member's version string is outside input: never a
// panic, and only a well-formed version is known.
func FuzzSafeVersion(f *testing.F) {
	for _, s := range []string{"3.4.23", "3.6.0-rc.1", "", "3..4", "-1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		safe, known := SafeVersion(v)
		if safe && !known {
			t.Fatalf("%q: safe but not known", v)
		}
	})
}

// Security.Check: endpoints take etcdctl's forms without a secret in
// them, TLS options refuse http:// and unix://, a user needs a password;
// no message holds the password.
func TestSecurityCheck(t *testing.T) {
	opt := Options{Endpoints: "--endpoints", TLS: "--ca-file", User: "--etcd-user", Password: "use --password-file", PasswordFile: "--password-file"}
	for _, c := range []struct {
		eps  []string
		sec  Security
		want string // "" for accepted
	}{
		{[]string{"http://a:2379", "https://b:2379"}, Security{}, ""},
		{[]string{"https://a:2379"}, Security{CAFile: "/ca"}, ""},
		{[]string{"https://a:2379"}, Security{User: "u", Password: "s3cret"}, ""},
		{[]string{"http://a:2379"}, Security{CAFile: "/ca"}, "need TLS endpoints"},
		{[]string{"unix:///run/etcd.sock"}, Security{CAFile: "/ca"}, "need TLS endpoints"},
		{[]string{"a:2379", "unixs:///run/etcd.sock"}, Security{CAFile: "/ca"}, ""},
		{[]string{"a:2379", "[::1]:2379", "unix:///run/etcd.sock", "unix://etcd.sock", "https://a:2379/"}, Security{}, ""},
		{[]string{"u:s3cret@a:2379"}, Security{}, "carries a user or password"},
		{[]string{"a"}, Security{}, "is not an endpoint"},
		{[]string{"a:"}, Security{}, "is not an endpoint"},
		{[]string{"unix://"}, Security{}, "is not an endpoint"},
		{[]string{"http://a:2379/v3"}, Security{}, "is not an endpoint"},
		{[]string{"http://a:2379?x=1"}, Security{}, "is not an endpoint"},
		{[]string{"https://a:2379"}, Security{CertFile: "/c"}, "needs its key"},
		{[]string{"http://u:s3cret@a:2379"}, Security{}, "carries a user or password"},
		{[]string{"ftp://a"}, Security{}, "is not an endpoint"},
		{[]string{"https://a:2379"}, Security{User: "u"}, "has no password"},
		{[]string{"https://a:2379"}, Security{Password: "s3cret"}, "no --etcd-user"},
		{[]string{"https://a:2379"}, Security{User: "a:b", Password: "s3cret"}, "no colon"},
	} {
		err := c.sec.Check(c.eps, opt)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %+v: %v", c.eps, c.sec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %+v: %v, want %q", c.eps, c.sec, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// ReadPassword: the first line of a 0600 file; a file others can read, a
// symlink or an empty file is refused, and no message holds the password.
// The file wins over the variable, and the variable is gone afterwards
// either way: the command run must not inherit it.
func TestPassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, env, want string }{
		{file, "fromenv", "fromfile"}, {"", "fromenv", "fromenv"}, {"", "", ""},
	} {
		t.Setenv("TEST_ETCD_PASSWORD", c.env)
		pw, err := Password(c.file, "--password-file", "TEST_ETCD_PASSWORD")
		if _, set := os.LookupEnv("TEST_ETCD_PASSWORD"); err != nil || pw != c.want || set {
			t.Errorf("Password(%q) with $TEST_ETCD_PASSWORD=%q: %q, %v; variable still set: %v", c.file, c.env, pw, err, set)
		}
	}
}

func TestReadPassword(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	ok := write("ok", "s3cret\nignored\n", 0o600)
	if pw, err := ReadPassword(ok, "--password-file"); err != nil || pw != "s3cret" {
		t.Errorf("0600 file: %q, %v", pw, err)
	}
	if pw, err := ReadPassword(write("ro", "s3cret\r\n", 0o400), "--password-file"); err != nil || pw != "s3cret" {
		t.Errorf("0400 file with CRLF: %q, %v", pw, err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(ok, link)
	for name, p := range map[string]string{
		"group-readable": write("g", "s3cret\n", 0o640),
		"world-readable": write("w", "s3cret\n", 0o604),
		"empty":          write("e", "\n", 0o600),
		"symlink":        link,
		"missing":        filepath.Join(dir, "none"),
	} {
		_, err := ReadPassword(p, "--password-file")
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
}
