//go:build linux

package runner

// Durations: one rule reads every duration both binaries take — their flags
// (--timeout, --kill-after, --wait, --ttl, --lock-delay, pause --for), the
// config's duration keys and the dashboard's pause form — with one rule, so
// that "3d" means the same everywhere: Go's durations (90m, 2h30m, 1.5h,
// 300ms) and days, "d", 24 hours each (3d, 1d12h, 1.5d). It writes them
// back the same way (FormatDuration) and, rounded, for people (ShortDuration). It links
// nothing but the standard library's time and strconv: the per-tick
// binaries use it.

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// Day is the unit "d".
const Day = 24 * time.Hour

// ErrDurationSyntax is wrapped by every error of ParseDuration.
var ErrDurationSyntax = errors.New("not a duration")

// ParseDuration reads a duration: an optional sign, then one or more numbers
// (decimal, with an optional fraction) each followed by a unit — ns, us
// (or µs), ms, s, m, h as Go's time.ParseDuration, or d for 24 hours —
// or "0" alone. Time zones and calendar days play no part: 1d is 24
// hours. An error wraps ErrDurationSyntax and quotes s; a value past about 292
// years overflows and is an error too.
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, &DurationError{Text: s}
	}
	rest, neg := s, false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	if rest == "0" {
		return 0, nil
	}
	if rest == "" {
		return bad()
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		if num == "" || unit == "" {
			return bad()
		}
		var d time.Duration
		if unit == "d" {
			h, err := time.ParseDuration(num + "h")
			if err != nil || h > math.MaxInt64/24 {
				return bad()
			}
			d = h * 24
		} else {
			var err error
			if d, err = time.ParseDuration(num + unit); err != nil {
				return bad()
			}
		}
		if total > math.MaxInt64-d {
			return bad()
		}
		total += d
		rest = rest[j:]
	}
	if neg {
		total = -total
	}
	return total, nil
}

// DurationError is ParseDuration's error: Text is not a duration.
type DurationError struct{ Text string }

func (e *DurationError) Error() string {
	return strconv.Quote(e.Text) + " is not a duration like 90m, 2h30m or 3d (units: ms, s, m, h, d)"
}

// Unwrap makes the error match ErrDurationSyntax.
func (e *DurationError) Unwrap() error { return ErrDurationSyntax }

// FormatDuration writes d as ParseDuration reads it, short: whole days as "3d", else as
// time.Duration.String without trailing zero units ("30m", "1h30m",
// "1d2h" for 26 hours).
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	days := d / Day
	rest := d % Day
	s := ""
	if days > 0 {
		s = strconv.FormatInt(int64(days), 10) + "d"
	}
	if rest > 0 {
		s += trimZeroUnits(rest.String())
	}
	return sign + s
}

// ShortDuration writes d for people, rounded to what a reader of a message uses:
// to the minute from an hour up (2h30m), to the second from a minute up
// (1m30s, 45m), to a tenth of a second from a second up (1.2s), to the
// millisecond below (350ms); hours are not made days. It loses precision:
// it is for messages, never for a value read back (FormatDuration is).
func ShortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Millisecond)
	}
	return trimZeroUnits(d.String())
}

// trimZeroUnits drops time.Duration.String's trailing zero units:
// "2h0m0s" is "2h", "5m0s" is "5m".
func trimZeroUnits(r string) string {
	for _, suf := range []string{"m0s", "h0m"} {
		if len(r) > len(suf) && r[len(r)-len(suf):] == suf {
			r = r[:len(r)-len(suf)+1]
		}
	}
	return r
}
