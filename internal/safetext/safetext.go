// Package safetext makes text that comes from outside — a file, another
// process, a user, the network, an etcd value — safe to print next to other
// text, on a terminal, in a one-line message, in JSON that may be shown raw,
// or in an alert. It is the one place where both binaries, the watchdog and
// the dashboard decide which characters are never printed as they are,
// where both binaries' messages go and when a skip is said at all
// (printer.go, Printer), and how a config message names its file, line
// and key (config.go, suggest.go).
//
// Unsafe (Unsafe reports it) are the characters that can move, hide,
// recolour or forge what is printed around them:
//
//   - the C0 controls U+0000–U+001F (line breaks, ESC, which starts terminal
//     escape sequences, BEL), DEL U+007F, and the C1 controls U+0080–U+009F
//     (U+009B is CSI, which some terminals take like ESC [);
//   - U+2028 and U+2029, the line and paragraph separators;
//   - the bidirectional controls (Unicode's Bidi_Control property): U+061C
//     ARABIC LETTER MARK, U+200E LEFT-TO-RIGHT MARK, U+200F RIGHT-TO-LEFT
//     MARK, the embeddings and overrides U+202A–U+202E and the isolates
//     U+2066–U+2069. An override makes a terminal or a browser show the text
//     after it in another order ("Trojan Source", CVE-2021-42574): a reason
//     could show a date that is not the one printed after it. The marks
//     (U+200E, U+200F, U+061C) are invisible and reorder the neutral
//     characters and digits around them, so they are treated the same;
//   - U+FEFF, the byte order mark (zero width no-break space): invisible,
//     and some tools drop it at the start of a line.
//
// And every byte that is not part of valid UTF-8: a lone 0x9B is CSI on a
// terminal that reads 8-bit controls.
//
// Right-to-left letters themselves (Hebrew, Arabic) are text, kept as they
// are; on the dashboard every such value sits in an isolating element, so
// its direction cannot spill over onto its neighbours.
package safetext

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Unsafe reports whether r is never printed raw (see the package doc).
func Unsafe(r rune) bool {
	switch {
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	case r < 0x61c:
		return false
	}
	switch r {
	case 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff:
		return true
	}
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Line returns s as one line that is safe to print: every unsafe character
// is written as a Go-style escape (\n, \t, \x1b, \u202e) and every byte that
// is not UTF-8 as \xNN; everything else is kept. The result holds no unsafe
// character and is valid UTF-8, so Line is idempotent: Line(Line(s)) ==
// Line(s), and s is returned as it is (without copying) when it is already
// safe. It is not reversible: a backslash in s is kept as it is, so a
// literal `\x1b` and an escaped ESC print alike (what is shown is for
// people; the stored value is unchanged).
func Line(s string) string { return clean(s, false, -1) }

// Text is Line for text of several lines, such as a command's output: line
// feeds and tabs are kept, every other unsafe character is escaped. It is
// idempotent too.
func Text(s string) string { return clean(s, true, -1) }

// Cut is Line cut to at most max bytes (a positive max): whole characters
// and escapes only, followed by "…" (3 bytes more) when something was left
// out.
func Cut(s string, max int) string { return clean(s, false, max) }

// safe reports whether s can be printed as it is (one line unless
// multiline).
func safe(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || multiline && (c == '\n' || c == '\t') {
			continue
		}
		if c < 0x80 {
			return false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Unsafe(r) {
			return false
		}
		i += n - 1
	}
	return true
}

func clean(s string, multiline bool, max int) string {
	if safe(s, multiline) && (max < 0 || len(s) <= max) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	var esc [12]byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+n]
		switch {
		case r == utf8.RuneError && n == 1:
			piece = string(hexByte(esc[:0], 'x', s[i]))
		case multiline && (r == '\n' || r == '\t'):
		case Unsafe(r):
			piece = string(escape(esc[:0], r))
		}
		if max >= 0 && len(b)+len(piece) > max {
			return string(b) + "…"
		}
		b = append(b, piece...)
		i += n
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

func hexByte(b []byte, kind byte, c byte) []byte {
	return append(b, '\\', kind, hexDigits[c>>4], hexDigits[c&15])
}

// escape writes r as Go writes it in a quoted string.
func escape(b []byte, r rune) []byte {
	switch r {
	case '\a':
		return append(b, `\a`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\n':
		return append(b, `\n`...)
	case '\r':
		return append(b, `\r`...)
	case '\t':
		return append(b, `\t`...)
	case '\v':
		return append(b, `\v`...)
	}
	if r < 0x80 {
		return hexByte(b, 'x', byte(r))
	}
	return append(b, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
}

// ErrUnsafe is wrapped by Check's error.
var ErrUnsafe = errors.New("unsafe character")

// Check returns nil when s is valid UTF-8 without an unsafe character (so
// Line(s) == s), else an error wrapping ErrUnsafe that names the first
// offender and its byte offset: "contains an escape (U+001B) at byte 7".
// It is the check of every entry point that stores text others will see
// (a pause reason from the command line, the config, the dashboard, an
// etcd value).
func Check(s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return &unsafeError{fmt.Sprintf("contains the byte 0x%02x at byte %d, which is not UTF-8", s[i], i)}
			}
		}
		if Unsafe(r) {
			return &unsafeError{fmt.Sprintf("contains %s (U+%04X) at byte %d", Describe(r), r, i)}
		}
	}
	return nil
}

type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }
func (e *unsafeError) Unwrap() error { return ErrUnsafe }

// Describe names an unsafe character for people: "a line break", "an
// escape", "a bidirectional control"...
func Describe(r rune) string {
	switch {
	case r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 || r == '\v' || r == '\f':
		return "a line break"
	case r == '\t':
		return "a tab"
	case r == 0x1b:
		return "an escape"
	case r == 0x9b:
		return "a terminal control sequence introducer"
	case r < 0xa0:
		return "a control character"
	case r == 0xfeff:
		return "a byte order mark"
	}
	return "a bidirectional control"
}

// JSON escapes, in encoded JSON, every unsafe character that encoding/json
// leaves raw (DEL, the C1 controls, the bidirectional controls, U+FEFF) as
// \uXXXX, so that the bytes are safe to print while the value they decode
// to is unchanged. Unsafe characters occur only inside JSON strings, where
// the escape means the same character; the JSON layout (line feeds and
// tabs of indentation, which are ASCII) is left alone. A byte that is not
// UTF-8 (which encoding/json never writes) becomes \ufffd. b is returned as
// it is when nothing needs escaping.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+32), b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case r >= 0x7f && Unsafe(r):
			out = append(out, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// Quote quotes s with Go escapes — always one printable line that shows the
// exact bytes (strconv.Quote escapes every unsafe character) — eliding the
// middle of strings over 90 bytes. For values in error messages, where
// showing what was written matters more than reading it.
func Quote(s string) string {
	const keep = 40
	if len(s) <= 2*keep+10 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]) + "..." + strconv.Quote(s[len(s)-keep:])
}
