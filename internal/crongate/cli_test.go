package crongate

import (
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/tests/kongtest"
)

func agree(t testing.TB, args []string) {
	var fast CLI
	if !fastParse(args, &fast) {
		return
	}
	kongtest.Agree(t, &fast, append([]string{"run"}, args...), kong.Name("cron-gate"), kong.Vars(gate.Vars()), kong.Vars{"version": "test"})
}

func TestFastParseRunForms(t *testing.T) {
	t.Setenv("CRON_GATE_CONFIG", "/env/c.toml")
	for _, c := range [][]string{
		{"classifier"},
		{"--config", "/etc/x.toml", "classifier"},
		{"--config=/etc/x.toml", "-q", "classifier"},
		{"classifier", "--timeout", "2h", "--kill-after", "5s"},
		{"-v", "x.y-z_1"},
		{"--once-per", "1d", "nightly"},
		{"--once-per=slot", "--timeout=1m", "g"},
		{"--jitter", "5m", "--once-per", "1h", "g"},
	} {
		var fast CLI
		if !fastParse(c, &fast) {
			t.Errorf("fastParse declined the common line %q", c)
		}
		agree(t, c)
	}
	for _, c := range [][]string{{}, {"a", "b"}, {"--help"}, {"--bogus", "x"}, {"--timeout", "5x", "x"}, {"-qv", "x"}, {"--once-per=", "x"}, {"-q", "-q", "x"}} {
		var fast CLI
		if fastParse(c, &fast) {
			t.Errorf("fastParse accepted %q; it must leave it to kong", c)
		}
	}
}

func TestParseErrorsAreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"x", "--"}, {"--bogus", "x", "--", "true"}, {"pause"}, {"x"}, {"status", "a", "b"},
		{"pause", "x", "--for", "1h", "--until", "2030-01-01 00:00"},
	} {
		if _, err := parse(args, io.Discard, func(int) { t.Fatalf("exit on %q", args) }); err == nil {
			t.Errorf("parse(%q) accepted a bad command line", args)
		} else if _, ok := err.(usageError); !ok {
			t.Errorf("parse(%q): %v is not a usage error", args, err)
		}
	}
}

func FuzzFastParse(f *testing.F) {
	f.Add("--config\x00/c.toml\x00gate")
	f.Add("-q\x00--timeout=1s\x00g")
	f.Add("--once-per\x00slot\x00g")
	f.Add("--once-per=1x\x00g")
	f.Add("--jitter=-5m\x00g")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		for _, a := range args {
			if strings.HasPrefix(a, "--help") || strings.HasPrefix(a, "--version") || !utf8.ValidString(a) ||
				(strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "h")) {
				return
			}
		}
		agree(t, args)
	})
}

// FuzzParseUntil: --until is outside input; it never panics, and a time it
// accepts prints back to the same instant.
func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"2026-12-01T09:00:00+09:00", "2026-12-01 09:00", "2026-12-01T09:00:05", "tomorrow", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseUntil(s, now)
		if err != nil {
			if _, ok := err.(usageError); !ok {
				t.Fatalf("parseUntil(%q): %v is not a usage error", s, err)
			}
			return
		}
		if back, err := parseUntil(tm.Format(time.RFC3339Nano), now); err != nil || !back.Equal(tm) {
			t.Fatalf("parseUntil(%q) = %v does not round-trip: %v %v", s, tm, back, err)
		}
	})
}

// Every subcommand is run by kong's ctx.Run through its Run method: one
// without would fail only when someone types it.
func TestEveryCommandRuns(t *testing.T) {
	var c CLI
	k, err := kong.New(&c, kong.Name("cron-gate"), kong.Vars(gate.Vars()), kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Model.Children) < 8 {
		t.Fatalf("%d commands", len(k.Model.Children))
	}
	for _, n := range k.Model.Children {
		if _, ok := n.Target.Addr().Interface().(interface{ Run(*env) error }); !ok {
			t.Errorf("command %s has no Run(*env) error method", n.Name)
		}
	}
}

// kong refuses a --once-per that is not a period, as a usage error.
func TestOncePerFlagRefused(t *testing.T) {
	if _, err := parse([]string{"--once-per", "2d", "g", "--", "true"}, io.Discard, func(int) { t.Fatal("exit") }); err == nil {
		t.Fatal("--once-per 2d accepted")
	} else if _, ok := err.(usageError); !ok {
		t.Fatalf("--once-per 2d: %v is not a usage error", err)
	}
}
