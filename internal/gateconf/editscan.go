//go:build linux

package gateconf

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crongate/crongate/internal/safetext"
)

// The statement scanner behind SetPaused (edit.go, step 2): it splits a
// TOML file into table headers and key = value statements, following
// strings, multi-line strings, arrays and inline tables across lines, and
// refuses what it does not understand. It only finds where statements
// are; the TOML library decodes them.

const (
	stmtTable      = iota + 1 // [a.b]
	stmtArrayTable            // [[a.b]]
	stmtKey                   // a.b = value
)

// editStmt is one top-level statement of a TOML file.
type editStmt struct {
	kind       int
	index      int      // position in editScanner.stmts
	line       int      // 1-based line it starts on
	start      int      // byte offset of the start of that line
	end        int      // byte offset just past the statement's last line, EOL included
	eol        string   // the EOL ending the statement: "\n", "\r\n" or "" at EOF
	indent     string   // whitespace before the statement
	key        []string // table name or key, decoded
	valStart   int      // stmtKey: the value's first byte
	valEnd     int      // stmtKey: just past the value
	simpleBool bool     // stmtKey: the value is true or false on this line alone
}

type editScanner struct {
	stmts []editStmt
	eol   string // line ending to use for new lines: that of the first line
}

type editScanErr struct {
	line int
	msg  string
}

// stmtAt returns the statement starting on line, or nil.
func (sc *editScanner) stmtAt(line int) *editStmt {
	for i := range sc.stmts {
		if sc.stmts[i].line == line {
			return &sc.stmts[i]
		}
	}
	return nil
}

// headerOf returns the table header st is under, nil for the root table.
func (sc *editScanner) headerOf(st *editStmt) *editStmt {
	for i := st.index - 1; i >= 0; i-- {
		if k := sc.stmts[i].kind; k == stmtTable || k == stmtArrayTable {
			return &sc.stmts[i]
		}
	}
	return nil
}

// tableOf returns the name of the table st is in (nil for the root).
func (sc *editScanner) tableOf(st *editStmt) []string {
	if h := sc.headerOf(st); h != nil {
		return h.key
	}
	return nil
}

// editScan splits data into statements. It understands the whole TOML
// syntax as far as line structure goes (strings of all four kinds,
// multi-line arrays and inline tables with comments), and reports, rather
// than guesses at, anything else.
func editScan(data []byte) (*editScanner, *editScanErr) {
	s := &editLexer{data: data, line: 1}
	sc := &editScanner{eol: "\n"}
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		sc.eol = "\r\n"
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		s.pos = 3
	}
	for s.pos < len(data) {
		st, err := s.statement()
		if err != nil {
			return nil, err
		}
		if st != nil {
			st.index = len(sc.stmts)
			sc.stmts = append(sc.stmts, *st)
		}
	}
	return sc, nil
}

type editLexer struct {
	data []byte
	pos  int
	line int
}

func (s *editLexer) errf(format string, args ...any) *editScanErr {
	return &editScanErr{line: s.line, msg: fmt.Sprintf(format, args...)}
}

func (s *editLexer) peek(off int) byte {
	if s.pos+off < len(s.data) {
		return s.data[s.pos+off]
	}
	return 0
}

func (s *editLexer) skipWS() {
	for s.pos < len(s.data) && (s.data[s.pos] == ' ' || s.data[s.pos] == '\t') {
		s.pos++
	}
}

// atEOL reports whether pos is at a line break or the end.
func (s *editLexer) atEOL() bool {
	return s.pos >= len(s.data) || s.data[s.pos] == '\n' ||
		s.data[s.pos] == '\r' && s.peek(1) == '\n'
}

// eolOrComment consumes optional whitespace, an optional comment and the
// line break; it returns the line break ("" at the end of the data).
func (s *editLexer) eolOrComment() (string, *editScanErr) {
	s.skipWS()
	if s.peek(0) == '#' {
		for s.pos < len(s.data) && !s.atEOL() {
			s.pos++
		}
	}
	return s.newline()
}

func (s *editLexer) newline() (string, *editScanErr) {
	switch {
	case s.pos >= len(s.data):
		return "", nil
	case s.data[s.pos] == '\n':
		s.pos++
		s.line++
		return "\n", nil
	case s.data[s.pos] == '\r' && s.peek(1) == '\n':
		s.pos += 2
		s.line++
		return "\r\n", nil
	}
	return "", s.errf("unexpected %s after a value or table header", editQuoteByte(s.data[s.pos]))
}

// statement reads one top-level line (blank, comment, header) or key/value
// statement (possibly spanning lines). It returns nil for blank and
// comment lines.
func (s *editLexer) statement() (*editStmt, *editScanErr) {
	st := &editStmt{line: s.line, start: s.pos}
	s.skipWS()
	st.indent = string(s.data[st.start:s.pos])
	switch c := s.peek(0); {
	case c == '#' || s.atEOL():
		if _, err := s.eolOrComment(); err != nil {
			return nil, err
		}
		return nil, nil
	case c == '[':
		st.kind = stmtTable
		s.pos++
		if s.peek(0) == '[' {
			st.kind = stmtArrayTable
			s.pos++
		}
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		st.key = key
		if s.peek(0) != ']' {
			return nil, s.errf("a table header that does not end with ]")
		}
		s.pos++
		if st.kind == stmtArrayTable {
			if s.peek(0) != ']' {
				return nil, s.errf("an array-of-tables header that does not end with ]]")
			}
			s.pos++
		}
	default:
		st.kind = stmtKey
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		st.key = key
		if s.peek(0) != '=' {
			return nil, s.errf("a key without =")
		}
		s.pos++
		s.skipWS()
		st.valStart = s.pos
		startLine := s.line
		if err := s.value(0); err != nil {
			return nil, err
		}
		st.valEnd = s.pos
		v := string(s.data[st.valStart:st.valEnd])
		st.simpleBool = s.line == startLine && (v == "true" || v == "false")
	}
	eol, err := s.eolOrComment()
	if err != nil {
		return nil, err
	}
	st.eol = eol
	st.end = s.pos
	return st, nil
}

// key reads a dotted key (of a key/value line or a table header) and the
// whitespace after it.
func (s *editLexer) key() ([]string, *editScanErr) {
	var parts []string
	for {
		s.skipWS()
		var part string
		switch c := s.peek(0); {
		case c == '"':
			if s.peek(1) == '"' && s.peek(2) == '"' {
				return nil, s.errf("a multi-line string used as a key")
			}
			str, err := s.basicString()
			if err != nil {
				return nil, err
			}
			part = str
		case c == '\'':
			if s.peek(1) == '\'' && s.peek(2) == '\'' {
				return nil, s.errf("a multi-line string used as a key")
			}
			str, err := s.literalString()
			if err != nil {
				return nil, err
			}
			part = str
		case safetext.IsBareKey(string(c)):
			start := s.pos
			for s.pos < len(s.data) && safetext.IsBareKey(string(s.data[s.pos])) {
				s.pos++
			}
			part = string(s.data[start:s.pos])
		case s.pos >= len(s.data):
			return nil, s.errf("the file ends in the middle of a key")
		default:
			return nil, s.errf("unexpected %s where a key should be", editQuoteByte(c))
		}
		parts = append(parts, part)
		s.skipWS()
		if s.peek(0) != '.' {
			return parts, nil
		}
		s.pos++
	}
}

// basicString reads a "..." string and returns its decoded value.
func (s *editLexer) basicString() (string, *editScanErr) {
	s.pos++ // "
	var b strings.Builder
	for {
		if s.pos >= len(s.data) || s.atEOL() {
			return "", s.errf("a string that does not end on its line")
		}
		c := s.data[s.pos]
		switch c {
		case '"':
			s.pos++
			return b.String(), nil
		case '\\':
			r, err := s.escape()
			if err != nil {
				return "", err
			}
			b.WriteString(r)
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
}

// editEscape returns what a TOML simple escape sequence (1.1 adds \e and
// \xHH) stands for, or for the others the number of hex digits that
// follow. Strings and a switch, not maps: a map literal at package level
// is built at every start-up of a binary that links the editor.
func editEscape(c byte) (simple string, hexDigits int) {
	switch c {
	case 'x':
		return "", 2
	case 'u':
		return "", 4
	case 'U':
		return "", 8
	}
	const from, to = "btnfre\"\\", "\b\t\n\f\r\x1b\"\\"
	if i := strings.IndexByte(from, c); i >= 0 {
		return to[i : i+1], 0
	}
	return "", 0
}

// escape decodes the escape sequence at pos (a backslash).
func (s *editLexer) escape() (string, *editScanErr) {
	s.pos++
	c := s.peek(0)
	s.pos++
	r, n := editEscape(c)
	if r != "" {
		return r, nil
	}
	if n == 0 || s.pos+n > len(s.data) {
		return "", s.errf("an escape sequence it does not know")
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+n]), 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return "", s.errf("an escape sequence it does not know")
	}
	s.pos += n
	return string(rune(v)), nil
}

// literalString reads a '...' string and returns its value.
func (s *editLexer) literalString() (string, *editScanErr) {
	s.pos++ // '
	start := s.pos
	for {
		if s.pos >= len(s.data) || s.atEOL() {
			return "", s.errf("a string that does not end on its line")
		}
		if s.data[s.pos] == '\'' {
			v := string(s.data[start:s.pos])
			s.pos++
			return v, nil
		}
		s.pos++
	}
}

// multiline skips a """...""" or ”'...”' string (pos at its opening
// quotes), counting lines.
func (s *editLexer) multiline(q byte) *editScanErr {
	s.pos += 3
	for {
		if s.pos >= len(s.data) {
			return s.errf("a multi-line string that does not end")
		}
		c := s.data[s.pos]
		switch {
		case c == '\\' && q == '"':
			s.pos++
			if s.peek(0) == '\n' {
				s.line++
			}
			s.pos++
		case c == q && s.peek(1) == q && s.peek(2) == q:
			s.pos += 3
			// Up to two more quotes belong to the content: """a""""".
			for i := 0; i < 2 && s.peek(0) == q; i++ {
				s.pos++
			}
			return nil
		case c == '\n':
			s.line++
			s.pos++
		default:
			s.pos++
		}
	}
}

// value skips one value starting at pos. depth > 0 inside arrays and
// inline tables, where values may be followed by , ] or }.
func (s *editLexer) value(depth int) *editScanErr {
	if depth > 100 {
		return s.errf("values nested too deeply")
	}
	switch c := s.peek(0); {
	case c == '"' && s.peek(1) == '"' && s.peek(2) == '"':
		return s.multiline('"')
	case c == '\'' && s.peek(1) == '\'' && s.peek(2) == '\'':
		return s.multiline('\'')
	case c == '"':
		_, err := s.basicString()
		return err
	case c == '\'':
		_, err := s.literalString()
		return err
	case c == '[' || c == '{':
		return s.container(depth)
	case s.pos >= len(s.data) || s.atEOL() || c == '#':
		return s.errf("a key without a value")
	}
	// A number, boolean or date/time. At the top level a date/time may
	// contain one space ("1979-05-27 07:32:00Z"); inside [ ] and { } the
	// value ends at , ] } or whitespace.
	for s.pos < len(s.data) && !s.atEOL() {
		c := s.data[s.pos]
		if c == '#' || c == ',' || c == ']' || c == '}' || c == '\t' {
			break
		}
		if c == ' ' {
			if depth > 0 || !editIsDigit(s.peek(1)) || s.pos == 0 || !editIsDigit(s.data[s.pos-1]) {
				break
			}
		}
		s.pos++
	}
	return nil
}

func editIsDigit(c byte) bool { return c >= '0' && c <= '9' }

// container skips an array or inline table (pos at its [ or {), which may
// span lines and hold comments.
func (s *editLexer) container(depth int) *editScanErr {
	open := s.data[s.pos]
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	s.pos++
	for {
		// Whitespace, line breaks, comments and commas between elements.
		for {
			s.skipWS()
			if s.peek(0) == '#' {
				for s.pos < len(s.data) && !s.atEOL() {
					s.pos++
				}
			}
			if s.pos < len(s.data) && !s.atEOL() && s.data[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.pos < len(s.data) && s.atEOL() {
				if _, err := s.newline(); err != nil {
					return err
				}
				continue
			}
			break
		}
		if s.pos >= len(s.data) {
			return s.errf("an array or inline table that does not end")
		}
		if s.data[s.pos] == closer {
			s.pos++
			return nil
		}
		if open == '{' {
			// key = value
			if _, err := s.key(); err != nil {
				return err
			}
			if s.peek(0) != '=' {
				return s.errf("a key without = in an inline table")
			}
			s.pos++
			s.skipWS()
		}
		before := s.pos
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if s.pos == before {
			return s.errf("unexpected %s in an array or inline table", editQuoteByte(s.peek(0)))
		}
	}
}

func editQuoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}
