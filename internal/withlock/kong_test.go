package withlock

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/tests/kongtest"
)

func checkAgree(t testing.TB, args []string) {
	var fast CLI
	if !FastParse(args, &fast) {
		return
	}
	if !utf8.ValidString(strings.Join(args, "")) {
		// Kong alters such bytes (parse refuses to hand them to it); the
		// fast parser must keep them exactly.
		all := strings.Join(args, "\x00")
		for _, p := range fast.Paths {
			if !strings.Contains(all, p) {
				t.Fatalf("fastParse altered path %q from %q", p, args)
			}
		}
		return
	}
	kongtest.Agree(t, &fast, args, kong.Name("withlock"), kong.Vars(Vars()))
}

func TestFastParseAgreesWithKong(t *testing.T) {
	t.Setenv("WITHLOCK_LOCK_DIR", "/env/locks")
	cases := [][]string{
		{"--paths", "a,b", "--slots", "4"},
		{"--paths=a,b", "--slots=4", "--slot-file=/tmp/s-{i}.lock"},
		{"-p", "a", "-p", "b,c", "-v"},
		{"--slots", "6", "--slot-file", "/tmp/g-{i}", "--slots", "4", "--slot-file", "/tmp/p-{i}"},
		{"--wait", "1m30s", "--timeout", "2h", "--kill-after", "0s", "--skip-code", "0"},
		{"--wait=0d", "--timeout", "1d12h", "--paths", "a"},
		{"--lock-dir", "/x", "-q", "-0", "--paths-from", "-"},
		{"--paths", "a,,b"},
		{"--paths=", "x"},
		// withlock-etcd parses with FastParse first too.
		{"--backend", "etcd", "--endpoints", "http://a:1,http://b:2", "--endpoints=https://c:3", "--key-root", "/srv", "--key-prefix", "/p",
			"--ttl", "10s", "--on-coordinator-down", "skip", "--lock-delay", "0s", "--ca-file", "/ca.pem", "--cert-file", "/c.pem",
			"--key-file", "/k.pem", "--server-name", "etcd.example", "--etcd-user", "u", "--password-file", "/pw", "--paths", "a"},
		{"--first-of", "--candidates-from", "-", "--slots", "2"},
		{"-0", "--first-of", "--candidates-from=/q/cands", "--wait", "5s"},
	}
	for _, c := range cases {
		var fast CLI
		if !FastParse(c, &fast) && !strings.Contains(strings.Join(c, " "), "--paths=") {
			t.Errorf("fastParse declined the common line %q", c)
		}
		checkAgree(t, c)
	}
}

func TestFastParseDeclines(t *testing.T) {
	for _, c := range [][]string{
		{"--help"}, {"--version"}, {"-vq"}, {"--bogus"}, {"--wait", "5x"},
		{"--skip-code", "010"}, {"--skip-code", "0x10"}, {"--wait", "1s", "--wait", "2s"},
		{"--paths"}, {"--paths", "-v"}, {"positional"},
		{"--endpoints", "a,,b"}, {"--endpoints", `a\,b`}, {"--ttl", "5"}, {"--ttl", "1s", "--ttl", "2s"},
		{"--first-of", "--first-of"}, {"--candidates-from"}, {"--first-of=true"},
	} {
		var fast CLI
		if FastParse(c, &fast) {
			t.Errorf("fastParse accepted %q; it must leave it to kong", c)
		}
	}
}

// FuzzFastParse: whenever the fast parser accepts a command line, kong must
// accept it and produce the same values.
func FuzzFastParse(f *testing.F) {
	f.Add("--paths\x00a,b\x00--slots\x004")
	f.Add("--wait=1s\x00-v\x00--slot-file\x00/t/{i}\x00--slots\x002")
	f.Add("-p\x00x\x00--skip-code\x0077\x00-q\x00-0")
	f.Add("--endpoints\x00http://a:1,http://b:2\x00--ttl=10s\x00--lock-delay\x000s\x00--etcd-user\x00u\x00--paths\x00a")
	f.Add("--first-of\x00--candidates-from\x00-\x00-0\x00--slots=3")
	f.Add("--candidates-from=c\x00--first-of\x00--candidates-from\x00d")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		for _, a := range args {
			// --help and --version make kong print and exit; the fast
			// parser declines them (TestFastParseDeclines).
			if strings.HasPrefix(a, "--help") || strings.HasPrefix(a, "--version") ||
				(strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "h")) {
				return
			}
		}
		checkAgree(t, args)
	})
}

// BenchmarkFastParse: the per-call price of reading CLI's tags
// (runner.FastParse) for a typical crontab line (docs/design.md).
func BenchmarkFastParse(b *testing.B) {
	args := []string{"--paths", "/srv/blog/en/a.md,/srv/blog/ko/a.md", "--slots", "2", "--timeout", "30m", "-q"}
	for b.Loop() {
		var c CLI
		if !FastParse(args, &c) {
			b.Fatal("declined")
		}
	}
}
