package safetext

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The reproduction, and each family of unsafe characters.
func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, 한국어, עברית", "plain text, 한국어, עברית"},
		{"L1\nL2\x1b]0;pwned\x07\x1b[31mred", `L1\nL2\x1b]0;pwned\a\x1b[31mred`},
		{"tab\there\r", `tab\there\r`},
		{"del\x7f c1\u0085\u009b", `del\x7f c1\u0085\u009b`},
		{"Jan 1, 2025\u202e5202 ,1 naJ", `Jan 1, 2025\u202e5202 ,1 naJ`},
		{"\u2066x\u2069 \u200e\u200f\u061c \ufeffbom \u2028\u2029", `\u2066x\u2069 \u200e\u200f\u061c \ufeffbom \u2028\u2029`},
		{"bad \xff\x9b utf8", `bad \xff\x9b utf8`},
		{"zero width joiner 👩\u200d💻 kept", "zero width joiner 👩\u200d💻 kept"},
		{`already \x1b escaped`, `already \x1b escaped`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Text("a\tb\nc\x1b[0m\r\n"); got != "a\tb\nc\\x1b[0m\\r\n" {
		t.Errorf("Text = %q", got)
	}
	if got := Cut("abc\x1bdef", 6); got != "abc…" {
		t.Errorf("Cut = %q, want the escape left out whole", got)
	}
	if got := Cut("abcdef", 6); got != "abcdef" {
		t.Errorf("Cut = %q", got)
	}
	if got := Cut("ab한국", 5); got != "ab한…" {
		t.Errorf("Cut = %q", got)
	}
}

// Unsafe is exactly: C0, DEL, C1, U+2028/9, Bidi_Control, U+FEFF.
func TestUnsafeSet(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Cc, r) || r == 0x2028 || r == 0x2029 || r == 0xfeff || unicode.Is(unicode.Bidi_Control, r)
		if Unsafe(r) != want {
			t.Errorf("Unsafe(%U) = %v, want %v", r, Unsafe(r), want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("quota exhausted — back at 9, 한국어"); err != nil {
		t.Errorf("Check of plain text: %v", err)
	}
	for in, want := range map[string]string{
		"L1\nL2":        "contains a line break (U+000A) at byte 2",
		"x\x1b[31m":     "contains an escape (U+001B) at byte 1",
		"ab\u202ecd":    "contains a bidirectional control (U+202E) at byte 2",
		"\ufeffx":       "contains a byte order mark (U+FEFF) at byte 0",
		"ok\xffno":      "contains the byte 0xff at byte 2, which is not UTF-8",
		"t\tab":         "contains a tab (U+0009) at byte 1",
		"c1 \u009b31m":  "contains a terminal control sequence introducer (U+009B) at byte 3",
		"isolate\u2067": "contains a bidirectional control (U+2067) at byte 7",
	} {
		err := Check(in)
		if err == nil || err.Error() != want || !errors.Is(err, ErrUnsafe) {
			t.Errorf("Check(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"reason": "a\u202eb\u0085c\x7fd\ufeff\u200e 한국어", "x": "\x1b"}
	data, _ := json.MarshalIndent(v, "", "\t")
	out := JSON(data)
	if strings.ContainsFunc(strings.NewReplacer("\n", "", "\t", "").Replace(string(out)), Unsafe) {
		t.Errorf("JSON left an unsafe character: %q", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["reason"] != v["reason"] || back["x"] != v["x"] {
		t.Errorf("JSON changed the value: %v %q", err, back)
	}
	if !strings.Contains(string(out), `\u202e`) || !strings.Contains(string(out), "\n\t\"reason\"") {
		t.Errorf("JSON = %s", out)
	}
	plain := []byte(`{"a":"b"}`)
	if got := JSON(plain); &got[0] != &plain[0] {
		t.Error("JSON copied a safe document")
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a\u202eb"); got != `"a\u202eb"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("x", 200)
	if got := Quote(long); !strings.Contains(got, `"..."`) || len(got) > 100 {
		t.Errorf("Quote(long) = %s", got)
	}
}

// FuzzLine: whatever the input, Line and Cut print one valid UTF-8 line
// without an unsafe character, Text keeps only line feeds and tabs of
// them, all three are idempotent, Check agrees with Line, and JSON keeps
// the decoded value.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "L1\nL2\x1b]0;pwned\x07\x1b[31mred", "\u202e\u2066\ufeff\u0085", "\xff\xfe", `\x1b`, "a\tb\r\n"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		bad := func(s string, allow string) bool {
			if !utf8.ValidString(s) {
				return true
			}
			return strings.ContainsFunc(s, func(r rune) bool { return Unsafe(r) && !strings.ContainsRune(allow, r) })
		}
		l := Line(s)
		if bad(l, "") {
			t.Fatalf("Line(%q) = %q holds an unsafe character", s, l)
		}
		if Line(l) != l {
			t.Fatalf("Line is not idempotent on %q: %q then %q", s, l, Line(l))
		}
		if (Check(s) == nil) != (l == s) {
			t.Fatalf("Check(%q) = %v but Line gives %q", s, Check(s), l)
		}
		x := Text(s)
		if bad(x, "\n\t") || Text(x) != x {
			t.Fatalf("Text(%q) = %q, then %q", s, x, Text(x))
		}
		if max = max%200 + 1; max > 0 {
			c := Cut(s, max)
			if bad(c, "") || len(strings.TrimSuffix(c, "…")) > max || !strings.HasPrefix(l, strings.TrimSuffix(c, "…")) {
				t.Fatalf("Cut(%q, %d) = %q (Line %q)", s, max, c, l)
			}
		}
		data, _ := json.Marshal(s)
		j := JSON(data)
		var back string
		if err := json.Unmarshal(j, &back); err != nil || back != strings.ToValidUTF8(s, "\ufffd") && utf8.ValidString(s) {
			t.Fatalf("JSON(%s) = %s decodes to %q, %v", data, j, back, err)
		}
		if bad(string(j), "") {
			t.Fatalf("JSON(%s) = %q holds an unsafe character", data, j)
		}
	})
}
