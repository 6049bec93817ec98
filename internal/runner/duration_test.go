package runner

import (
	"errors"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"3d", 72 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"90m", 90 * time.Minute},
		{"2h30m", 150 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"300ms", 300 * time.Millisecond},
		{"10µs", 10 * time.Microsecond},
		{"0", 0},
		{"-2d", -48 * time.Hour},
		{"+1h", time.Hour},
		{"0d", 0},
		{".5d", 12 * time.Hour},
		{"106751d", 106751 * Day},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		// The Go durations read as time.ParseDuration reads them.
		if want, err := time.ParseDuration(c.in); err == nil && want != got {
			t.Errorf("Parse(%q) = %v, time.ParseDuration %v", c.in, got, want)
		}
	}
	for _, in := range []string{"", "d", "3", "3x", "3 d", "d3", "1h-5m", "--1h", "1.2.3d", "106752d", "9999999999h", "3D", "1w"} {
		if d, err := ParseDuration(in); err == nil || !errors.Is(err, ErrDurationSyntax) {
			t.Errorf("Parse(%q) = %v, %v; want an error", in, d, err)
		}
	}
	if _, err := ParseDuration("3x"); err.Error() != `"3x" is not a duration like 90m, 2h30m or 3d (units: ms, s, m, h, d)` {
		t.Errorf("message: %v", err)
	}
}

func TestShortDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		150*time.Minute + 20*time.Second: "2h30m", 2 * time.Hour: "2h", 72 * time.Hour: "72h",
		45*time.Minute + 200*time.Millisecond: "45m", 90*time.Second + 400*time.Millisecond: "1m30s",
		1234 * time.Millisecond: "1.2s", 350*time.Millisecond + 400*time.Microsecond: "350ms", 0: "0s",
	} {
		if got := ShortDuration(in); got != want {
			t.Errorf("Short(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{{72 * time.Hour, "3d"}, {26 * time.Hour, "1d2h"}, {30 * time.Minute, "30m"}, {90 * time.Minute, "1h30m"}, {0, "0s"}, {-Day, "-1d"}, {1500 * time.Millisecond, "1.5s"}} {
		got := FormatDuration(c.in)
		if got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.in, got, c.want)
		}
		if back, err := ParseDuration(got); err != nil || back != c.in {
			t.Errorf("Parse(FormatDuration(%v)) = %v, %v", c.in, back, err)
		}
	}
}

// FuzzParse: ParseDuration never panics; what Go reads it reads alike, and FormatDuration
// writes what it reads back.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"3d", "1d12h", "90m", "1.5h", "0", "-2d", "3x", "", ".5d", "1h-5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if g, gerr := time.ParseDuration(s); gerr == nil && (err != nil || g != d) {
			t.Fatalf("%q: ParseDuration %v %v, time.ParseDuration %v", s, d, err, g)
		}
		if err != nil {
			return
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Fatalf("%q = %v: FormatDuration %q reads back as %v, %v", s, d, FormatDuration(d), back, err)
		}
	})
}
