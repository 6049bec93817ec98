package gate

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // "" = valid; else a substring of the error
	}{
		{"backup", ""},
		{"a", ""},
		{"A", ""},
		{"0", ""},
		{"db-backup_2.daily", ""},
		{"nightly.sync", ""},
		{"x.", ""},
		{"a-", ""},
		{"Pause", ""},  // reserved names are case-sensitive
		{"runner", ""}, // only exact reserved names
		{"pause2", ""},
		{strings.Repeat("a", 100), ""},

		{"", "is empty"},
		{strings.Repeat("a", 101), "is 101 bytes long; use at most 100"},
		{strings.Repeat("a", 5000), "is 5000 bytes long"},
		{"a/b", "contains '/'"},
		{"/", "contains '/'"},
		{"..", "starts with '.'"},
		{".", "starts with '.'"},
		{"a..b", `contains ".."`},
		{"a..", `contains ".."`},
		{".hidden", "starts with '.'"},
		{"-rf", "starts with '-'"},
		{"_x", "starts with '_'"},
		{"a b", `contains " "`},
		{"a\tb", "control character"},
		{"a\nb", "control character"},
		{"a\x00b", "control character"},
		{"a\x7fb", "control character"},
		{"caf\u00e9", "non-ASCII"},
		{"a\xffb", "non-ASCII"},
		{"a:b", `contains ":"`},
		{"a*", `contains "*"`},
		{"a\\b", `contains "\\"`},
		{"pause", `gate name "pause" is reserved for the pause subcommand; pick another`},
		{"resume", "reserved for the resume subcommand"},
		{"status", "reserved for the status subcommand"},
		{"check", "reserved for the check subcommand"},
		{"serve", "reserved for the serve subcommand"},
		{"metrics", "reserved for the metrics subcommand"},
		{"help", "reserved for the help subcommand"},
		{"version", "reserved for the version subcommand"},
		{"run", "reserved for the run subcommand"},
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("CheckName(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckName(%q) = nil, want error containing %q", tt.name, tt.wantErr)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.wantErr) {
			t.Errorf("CheckName(%q) = %q, want it to contain %q", tt.name, msg, tt.wantErr)
		}
		if strings.ContainsAny(msg, "\n\r") {
			t.Errorf("CheckName(%q) error is not a single line: %q", tt.name, msg)
		}
		if len(msg) > 300 {
			t.Errorf("CheckName(%q) error is %d bytes long", tt.name, len(msg))
		}
	}
}

// TestCheckNameAllBytes checks the allowed alphabet exhaustively, one byte at
// a time in the first and in a later position.
func TestCheckNameAllBytes(t *testing.T) {
	for b := 0; b < 256; b++ {
		c := byte(b)
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		later := alnum || c == '.' || c == '_' || c == '-'
		if got := CheckName(string([]byte{c})) == nil; got != alnum {
			t.Errorf("CheckName(%q) ok = %v, want %v", string([]byte{c}), got, alnum)
		}
		if got := CheckName(string([]byte{'a', c, 'z'})) == nil; got != later {
			t.Errorf("CheckName(%q) ok = %v, want %v", "a"+string([]byte{c})+"z", got, later)
		}
	}
}

func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"backup", "", "..", "a/b", "pause", "a..b", "-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := CheckName(name)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if name == "" || len(name) > MaxNameLen || strings.Contains(name, "/") ||
			strings.Contains(name, "..") || name[0] == '.' || name[0] == '-' {
			t.Fatalf("CheckName(%q) accepted an unsafe name", name)
		}
		for i := 0; i < len(name); i++ {
			if !isNameByte(name[i]) {
				t.Fatalf("CheckName(%q) accepted byte %q", name, name[i])
			}
		}
	})
}
