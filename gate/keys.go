//go:build linux

package gate

// The table of config keys: every key of every table of the config file,
// with its type, default, range and one line of documentation, and the
// rules between keys. It is the one place these are written:
//
//   - gateconf's decoder walks the TOML file and, for each key, asks this
//     table for its type, checks the value with Spec.Problems and stores
//     it with Key.Set, then applies the table's Defaults and Rule;
//   - Config.Validate reads every key back with Key.Get and applies the
//     same Spec.Problems and Rule, so a Config built in code meets the
//     same ranges as one decoded from a file;
//   - unknown-key suggestions come from the tables' names (Table.Names);
//   - docs/config.md's key tables are generated from KeyDocs (TestDocsConfigKeys).
//
// Adding a key is one entry here plus its use. The tables are plain
// composite literals of functions without captured variables, so they are
// laid out by the linker: nothing runs at start-up, and nothing here uses
// reflection.

import (
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Kind is the type of a key's value in the file, and what the decoder
// checks before the key's own checks.
type Kind uint8

// The kinds of keys.
const (
	KindString      Kind = iota // a string
	KindBool                    // true or false
	KindInt                     // an integer, within Min..Max
	KindNumber                  // an integer or a float, within Min..Max
	KindDuration                // a Go duration string such as "30m"; Min 1 (ns): positive, Min 0: not negative
	KindPath                    // an absolute path (checkAbs)
	KindPaths                   // an array of absolute paths
	KindArgv                    // an array of strings: a command and its arguments (checkArgv; EmptyOK: [] is allowed)
	KindURL                     // an http or https URL (checkURL)
	KindURLs                    // a non-empty array of etcd endpoints (etcdendpoint: etcdctl's forms)
	KindUnit                    // a systemd unit name with its type (checkUnit)
	KindEnum                    // a string, one of Values (the key's Check checks it)
	KindTable                   // a [table]
	KindTables                  // an array of tables, [[table]]
	KindNamedTables             // a table of [NAME.x] tables, one per name
)

// Value is a key's value in the one form the checks read: the field of
// its kind is set (S for the string kinds and, for a duration, the text
// it was written as; N for KindInt; F for KindNumber; B; D; L for the
// array kinds).
type Value struct {
	S string
	N int64
	F float64
	B bool
	D time.Duration
	L []string
}

// Spec is what is known of a key apart from where it lives in a Config.
type Spec struct {
	Name string // as written in the file
	Kind Kind
	Doc  string // one line, for the docs (docs/config.md, man page) and some messages

	// Default is the value used when the key is not given, rendered in
	// the docs; DefaultNote qualifies it ("with log_output") or, when
	// Default is zero, replaces it ("the global skip_code").
	Default     Value
	DefaultNote string

	// Example is a value as written in the file, shown in messages
	// ("must be a duration string like "30m"").
	Example string

	Min, Max float64  // KindInt, KindNumber: the accepted range (Max 0: no maximum); KindDuration: see Kind, and Max (ns) the longest, 0: no maximum
	EmptyOK  bool     // KindArgv: an empty array is a value
	Values   []string // KindEnum: the accepted values

	// Check is the key's own check of a value that has the right kind,
	// after the kind's (paths absolute, URLs well formed, ...). It
	// returns why v is refused, or "".
	Check func(s *Spec, v Value) string
}

// Problem is one thing wrong with a value or a table. For a value, Key is
// "" or the element ("[2]"); for a table's Rule, the key the problem is
// about, "" for the table as a whole.
type Problem struct {
	Key, Msg string
}

// Problems returns what is wrong with v, a value of the key's kind: the
// kind's checks, element by element, and then, if they pass, Check. A nil
// result means v is accepted. It allocates only when v is refused.
func (s *Spec) Problems(v Value) []Problem {
	msg := ""
	switch s.Kind {
	case KindPath:
		msg = checkAbs(v.S)
	case KindURL:
		msg = checkURL(v.S)
	case KindUnit:
		msg = checkUnit(v.S)
	case KindArgv:
		msg = checkArgv(v.L, s.EmptyOK)
	case KindURLs:
		if len(v.L) == 0 {
			msg = "is empty; give at least one, like " + s.Example
			break
		}
		fallthrough
	case KindPaths:
		var out []Problem
		for i, e := range v.L {
			if m := s.checkElem(e); m != "" {
				out = append(out, Problem{"[" + strconv.Itoa(i) + "]", m})
			}
		}
		if out != nil {
			return out
		}
	}
	if msg == "" && s.Check != nil {
		msg = s.Check(s, v)
	}
	if msg == "" {
		return nil
	}
	return []Problem{{"", msg}}
}

// checkElem checks an element of a KindPaths or KindURLs value.
func (s *Spec) checkElem(e string) string {
	if s.Kind == KindURLs {
		return checkEndpoint(e)
	}
	return checkAbs(e)
}

// Key is one key of a table whose values live in a T.
type Key[T any] struct {
	Spec
	// Get reads the key's value from t, and whether it is set: an unset
	// key (the zero value of an optional setting) is not checked.
	Get func(t *T) (Value, bool)
	// Set stores an accepted value in t.
	Set func(t *T, v Value)
}

// Given tells a table's Defaults and Rule which keys were given: written
// in the file when decoding, set in the struct when validating.
type Given interface {
	Has(key string) bool // the key is given
	Any() bool           // some key is given (decoding: also an unknown one)
}

// Table is one table of the config file, or the top level.
type Table[T any] struct {
	Name string // as keys are prefixed in messages: "" (top level), "gates.NAME", "check", "notify[i]", ...
	Keys []Key[T]
	// Defaults fills in, after decoding, the values that depend on
	// other keys (log_max_bytes with log_output). Decoding only: a Config
	// built in code states them.
	Defaults func(t *T, g Given)
	// Rule returns the problems between keys, for decoding (after
	// Defaults) and Validate alike.
	Rule func(t *T, g Given) []Problem
}

// Key returns the key named name, or nil.
func (tb *Table[T]) Key(name string) *Key[T] {
	for i := range tb.Keys {
		if tb.Keys[i].Name == name {
			return &tb.Keys[i]
		}
	}
	return nil
}

// Names returns the table's key names, in documentation order.
func (tb *Table[T]) Names() []string {
	out := make([]string, len(tb.Keys))
	for i := range tb.Keys {
		out[i] = tb.Keys[i].Name
	}
	return out
}

// Unknown returns the message for a key the table does not have: with
// the closest known name when one is close enough to be a typo, else the
// list of known names. full is the key as written in messages.
func (tb *Table[T]) Unknown(full, k string) string {
	msg := "unknown key " + full
	if s := safetext.Closest(k, tb.Names()); s != "" {
		return msg + "; did you mean " + s + "?"
	}
	return msg + "; the keys allowed here are " + strings.Join(tb.Names(), ", ")
}

// check returns the first problem of t (every set key's value, then the
// rule), as the key it concerns (relative to the table) and the message.
func (tb *Table[T]) check(t *T) (key, msg string, bad bool) {
	for i := range tb.Keys {
		k := &tb.Keys[i]
		if k.Get == nil {
			continue
		}
		v, set := k.Get(t)
		if !set {
			continue
		}
		if p := k.Problems(v); len(p) > 0 {
			return k.Name + p[0].Key, p[0].Msg, true
		}
	}
	if tb.Rule != nil {
		if p := tb.Rule(t, setKeys[T]{tb, t}); len(p) > 0 {
			return p[0].Key, p[0].Msg, true
		}
	}
	return "", "", false
}

// setKeys is Given for a struct: the keys whose Get says set.
type setKeys[T any] struct {
	tb *Table[T]
	t  *T
}

func (s setKeys[T]) Has(name string) bool {
	k := s.tb.Key(name)
	if k == nil || k.Get == nil {
		return false
	}
	_, set := k.Get(s.t)
	return set
}

func (s setKeys[T]) Any() bool {
	for i := range s.tb.Keys {
		if s.Has(s.tb.Keys[i].Name) {
			return true
		}
	}
	return false
}

// The checks shared by several keys, each written once.

// inRange refuses a number outside Min..Max.
func inRange(s *Spec, v Value) string {
	if s.outside(v) {
		return s.text(v) + " is out of range; use " + fmtNum(s.Min) + " to " + fmtNum(s.Max)
	}
	return ""
}

// inRangeSays is inRange, saying what the number means (the key's Doc).
func inRangeSays(s *Spec, v Value) string {
	if msg := inRange(s, v); msg != "" {
		return msg + " (" + s.Doc + ")"
	}
	return ""
}

// exitStatus refuses an exit status outside Min..Max.
func exitStatus(s *Spec, v Value) string {
	if s.outside(v) {
		return s.text(v) + " is out of range; use an exit status from " + fmtNum(s.Min) + " to " + fmtNum(s.Max)
	}
	return ""
}

// records refuses a history outside Min..Max.
func records(s *Spec, v Value) string {
	switch {
	case float64(v.N) < s.Min:
		return s.text(v) + " is too small; keep at least " + fmtNum(s.Min) + " records"
	case float64(v.N) > s.Max:
		return s.text(v) + " is too large; keep at most " + fmtNum(s.Max) + " records"
	}
	return ""
}

// byteCount refuses a size outside Min..Max, saying why there is a Max.
func byteCount(s *Spec, v Value) string {
	switch {
	case float64(v.N) < s.Min:
		return s.text(v) + " is too small; use at least " + fmtNum(s.Min)
	case float64(v.N) > s.Max:
		return s.text(v) + " is too large; use at most " + fmtNum(s.Max) + " (the output is held in memory until the run ends)"
	}
	return ""
}

// duration refuses a duration below Min (see KindDuration), or above
// Max when there is one.
func duration(s *Spec, v Value) string {
	switch {
	case s.Max > 0 && v.D > time.Duration(s.Max):
		return s.text(v) + " is too long; use at most " + runner.FormatDuration(time.Duration(s.Max))
	case v.D >= time.Duration(s.Min):
		return ""
	case s.Min > 0:
		return s.text(v) + " is not positive; use a duration like " + s.Example + ", or remove the key"
	}
	return s.text(v) + " is negative; use a duration of 0 or more, like " + s.Example
}

func (s *Spec) outside(v Value) bool {
	f := s.num(v)
	return !(f >= s.Min && (s.Max == 0 || f <= s.Max)) // NaN is outside
}

func (s *Spec) num(v Value) float64 {
	if s.Kind == KindNumber {
		return v.F
	}
	return float64(v.N)
}

// text is v as a message shows it.
func (s *Spec) text(v Value) string {
	switch s.Kind {
	case KindNumber:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case KindInt:
		return strconv.FormatInt(v.N, 10)
	case KindDuration:
		if v.S == "" { // built in code: not written as text
			return safetext.Quote(v.D.String())
		}
	}
	return safetext.Quote(v.S)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func oneOf(s string, list []string) bool {
	for _, e := range list {
		if s == e {
			return true
		}
	}
	return false
}

// eitherOr quotes two or more choices: "a" or "b", "a", "b" or "c".
func eitherOr(list []string) string {
	s := ""
	for i, e := range list {
		switch {
		case i == 0:
		case i == len(list)-1:
			s += " or "
		default:
			s += ", "
		}
		s += strconv.Quote(e)
	}
	return s
}

// enum refuses a value that is not one of Values.
func enum(s *Spec, v Value) string {
	if !oneOf(v.S, s.Values) {
		return safetext.Quote(v.S) + " is not " + eitherOr(s.Values)
	}
	return ""
}

// KeyDoc describes one key for documentation (docs/config.md's key tables;
// a man page).
type KeyDoc struct {
	Table   string // "" for the top level, else as in a header: "gates.NAME", "check", "[notify]", ...
	Name    string
	Type    string // in words, with the accepted range
	Default string // as written in the file ("75", `"15m"`); "" when the default is not a value
	Note    string // qualifies Default ("with log_output") or, when Default is "", says what applies
	Doc     string
}

// KeyDocs returns every key of every table, table by table, each in
// documentation order.
func KeyDocs() []KeyDoc {
	var out []KeyDoc
	add := func(table string, s *Spec) {
		out = append(out, KeyDoc{Table: table, Name: s.Name, Type: s.typeText(), Default: s.defaultText(), Note: s.DefaultNote, Doc: s.Doc})
	}
	for i := range TopTable.Keys {
		add("", &TopTable.Keys[i].Spec)
	}
	for i := range GateTable.Keys {
		add(GateTable.Name, &GateTable.Keys[i].Spec)
	}
	for i := range CheckTable.Keys {
		add(CheckTable.Name, &CheckTable.Keys[i].Spec)
	}
	for i := range NotifyTable.Keys {
		add("[notify]", &NotifyTable.Keys[i].Spec)
	}
	for i := range ServeTable.Keys {
		add(ServeTable.Name, &ServeTable.Keys[i].Spec)
	}
	for i := range EtcdTable.Keys {
		add(EtcdTable.Name, &EtcdTable.Keys[i].Spec)
	}
	return out
}

// typeText is the key's kind in words, with its range.
func (s *Spec) typeText() string {
	rng := ""
	if s.Kind == KindInt || s.Kind == KindNumber {
		if s.Max != 0 {
			rng = ", " + fmtNum(s.Min) + " to " + fmtNum(s.Max)
		} else {
			rng = ", at least " + fmtNum(s.Min)
		}
	}
	switch s.Kind {
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer" + rng
	case KindNumber:
		return "number" + rng
	case KindDuration:
		if s.Min > 0 && s.Max > 0 {
			return "duration, > 0, at most " + runner.FormatDuration(time.Duration(s.Max))
		}
		if s.Min > 0 {
			return "duration, > 0"
		}
		return "duration, >= 0"
	case KindPath:
		return "absolute path"
	case KindPaths:
		return "array of absolute paths"
	case KindArgv:
		if s.EmptyOK {
			return "command (array of strings), may be empty"
		}
		return "command (array of strings)"
	case KindURL:
		return "http(s) URL"
	case KindURLs:
		return "array of etcd endpoints"
	case KindUnit:
		return "systemd unit name"
	case KindEnum:
		return eitherOr(s.Values)
	case KindTable:
		return "table"
	case KindTables:
		return "array of tables"
	case KindNamedTables:
		return "tables"
	}
	return "string"
}

// defaultText is the key's default as written in the file, "" when the
// default is not a value.
func (s *Spec) defaultText() string {
	d := s.Default
	switch {
	case d.S != "":
		return strconv.Quote(d.S)
	case d.N != 0:
		return strconv.FormatInt(d.N, 10)
	case d.F != 0:
		return strconv.FormatFloat(d.F, 'g', -1, 64)
	case d.D != 0:
		return strconv.Quote(runner.FormatDuration(d.D))
	case d.L != nil:
		return "[" + strings.Join(quoteEach(d.L), ", ") + "]"
	case s.Kind == KindBool && d.B:
		return "true"
	case s.Kind == KindBool && s.DefaultNote == "":
		return "false"
	}
	return ""
}

func quoteEach(l []string) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = strconv.Quote(e)
	}
	return out
}
