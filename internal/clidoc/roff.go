//go:build linux

package clidoc

import (
	"fmt"
	"regexp"
	"strings"
)

// roff builds a man(7) page. Text given to text, tp and the like is
// escaped (see esc); only the methods named raw take roff as is.
type roff struct{ b strings.Builder }

// th starts the page.
func (r *roff) th(title string, section int, date, source, manual string) {
	fmt.Fprintf(&r.b, ".TH %s %d %s %s %s\n", quoteArg(title), section, quoteArg(date), quoteArg(source), quoteArg(manual))
}

// sh starts a section; ss a subsection.
func (r *roff) sh(name string) { fmt.Fprintf(&r.b, ".SH %s\n", quoteArg(esc(name))) }
func (r *roff) ss(name string) { fmt.Fprintf(&r.b, ".SS %s\n", quoteArg(esc(name))) }

// pp starts a paragraph.
func (r *roff) pp() { r.b.WriteString(".PP\n") }

// text writes a paragraph's text, escaped and filled.
func (r *roff) text(s string) { r.rawLine(esc(s)) }

// raw writes roff as is: one or more lines.
func (r *roff) raw(s string) {
	r.b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		r.b.WriteByte('\n')
	}
}

// lineMax is the longest text line written where words allow (mandoc
// -Tlint's style check).
const lineMax = 80

// rawLine writes already escaped text as lines of at most lineMax bytes,
// broken between words (roff fills them again), guarding a leading
// control character on each.
func (r *roff) rawLine(s string) {
	line := ""
	flush := func() {
		if line == "" {
			return
		}
		if line[0] == '.' || line[0] == '\'' {
			line = `\&` + line
		}
		r.b.WriteString(line)
		r.b.WriteByte('\n')
		line = ""
	}
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > lineMax {
			flush()
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	flush()
}

// tp writes a tagged paragraph: tag is roff (build it with bold, italic,
// esc), each of body is escaped text, one paragraph each.
func (r *roff) tp(tag string, body ...string) {
	r.b.WriteString(".TP\n")
	r.rawLine(tag)
	for i, p := range body {
		if i > 0 {
			r.b.WriteString(".IP\n")
		}
		r.text(p)
	}
}

// example writes lines as they are (no filling), indented.
func (r *roff) example(lines ...string) {
	if !r.afterHeading() {
		r.b.WriteString(".PP\n")
	}
	r.b.WriteString(".RS 4\n.EX\n")
	for _, l := range lines {
		l = esc(l)
		if l == "" {
			r.b.WriteString(`\&` + "\n")
			continue
		}
		if l[0] == '.' || l[0] == '\'' {
			l = `\&` + l
		}
		r.b.WriteString(l)
		r.b.WriteByte('\n')
	}
	r.b.WriteString(".EE\n.RE\n")
}

// afterHeading reports whether the last line written is a section or
// subsection heading (where a paragraph macro is redundant).
func (r *roff) afterHeading() bool {
	s := strings.TrimSuffix(r.b.String(), "\n")
	last := s[strings.LastIndexByte(s, '\n')+1:]
	return strings.HasPrefix(last, ".SH ") || strings.HasPrefix(last, ".SS ")
}

func (r *roff) String() string { return r.b.String() }

// bold and italic return escaped text in that font.
func bold(s string) string   { return `\fB` + esc(s) + `\fR` }
func italic(s string) string { return `\fI` + esc(s) + `\fR` }

// optionDash matches an option (--paths-from, -p, "--") or a minus sign
// in text, whose dashes roff must get as \- (a plain "-" is a hyphen,
// which may be typeset as one and then cannot be searched for or copied
// as an option); a hyphenated word keeps its hyphen.
var optionDash = regexp.MustCompile(`(^|[\s(\[{'"=,/|])(--?)([A-Za-z0-9][A-Za-z0-9_-]*|[\s)\]'",.:;]|$)`)

// backtick matches `code` in the key table's docs.
var backtick = regexp.MustCompile("`([^`]+)`")

// esc escapes text for roff: backslashes, the dashes of options, `code`
// set in bold, and every character outside printable ASCII written as a
// \[uXXXX] escape (both groff and mandoc read those), so that the page
// renders the same whatever the locale. The result is safe anywhere in a
// text line; a leading control character is guarded where lines are
// written.
func esc(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\e`)
		case c == '\n' || c == '\t':
			b.WriteByte(' ')
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\[u%04X]`, c)
		case c >= 0x80:
			switch c {
			case '—':
				b.WriteString(`\(em`)
			case '–':
				b.WriteString(`\(en`)
			case '…':
				b.WriteString("...")
			case '‘', '’':
				b.WriteString(`'`)
			case '“', '”':
				b.WriteString(`"`)
			default:
				fmt.Fprintf(&b, `\[u%04X]`, c)
			}
		default:
			b.WriteRune(c)
		}
	}
	s = b.String()
	// Twice: adjacent options ("-- --x") share a boundary character.
	for range 2 {
		s = optionDash.ReplaceAllStringFunc(s, func(m string) string {
			return strings.ReplaceAll(m, "-", `\-`)
		})
	}
	return backtick.ReplaceAllString(s, `\fB$1\fR`)
}

// quoteArg quotes a macro argument: inside double quotes a quote is
// written "" (groff and mandoc both read that).
func quoteArg(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
