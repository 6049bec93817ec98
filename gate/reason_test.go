package gate

import (
	"errors"
	"strings"
	"testing"

	"github.com/crongate/crongate/internal/safetext"
)

// CheckReason refuses control and bidi characters (issue 12, item 7), and
// so does Config.Validate for a config built in code.
func TestCheckReason(t *testing.T) {
	for _, ok := range []string{"", "quota", "מכסה quota 한국어", "👩\u200d💻 back at 9"} {
		if err := CheckReason(ok); err != nil {
			t.Errorf("CheckReason(%q) = %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"L1\nL2":         "the reason contains a line break (U+000A) at byte 2; write it on one line",
		"x\x1b[31m":      "contains an escape (U+001B)",
		"Jan 1\u202e":    "contains a bidirectional control (U+202E)",
		"\u2066isolate":  "contains a bidirectional control (U+2066)",
		"mark\u200f":     "contains a bidirectional control (U+200F)",
		"bom\ufeff":      "contains a byte order mark (U+FEFF)",
		"not utf8 \xff":  "not UTF-8",
		"del\x7f":        "U+007F",
		"c1 \u0085 next": "U+0085",
	} {
		err := CheckReason(in)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, safetext.ErrUnsafe) {
			t.Errorf("CheckReason(%q) = %v, want %q", in, err, want)
		}
	}
	cfg := &Config{Path: "/c", History: DefaultHistory, Gates: map[string]*GateConfig{"g": {Name: "g", Paused: true, Reason: "a\u202eb"}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "gates.g.reason") || !strings.Contains(err.Error(), "U+202E") {
		t.Errorf("Validate = %v", err)
	}
}
