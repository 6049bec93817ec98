//go:build linux

package gateconf

// The TOML configuration file.
//
// Decoding. The file is decoded by github.com/BurntSushi/toml into
// map[string]toml.Primitive and then walked one key at a time, each table
// with its table of keys from package gate (gate/keys.go), which says what
// every key is, how it is checked and where it goes (decodeTable): every
// leaf is decoded into an `any` and type-checked here, so a value of the
// wrong type is reported with its key and line in our own words instead of
// the library's "incompatible types" message; its value is then checked by
// the same code as Config.Validate's; and unknown keys are found at every
// level without relying on MetaData.Undecoded.
//
// Line numbers. The library (v1.6.0) records the position of every key it
// parses but exposes no key -> position lookup: MetaData.Keys, Undecoded,
// IsDefined and Type carry no position, and only syntax errors come back as
// a toml.ParseError with a Position. It does however put the key's line in
// the errors it returns while decoding a Primitive, so lineOf decodes the
// key's Primitive into a probe that cannot hold any TOML value and reads the
// line back from the error:
//
//   - fast path: a `chan` target makes the library return
//     `toml: line N (last key "k"): unsupported type chan`, built in O(1)
//     from the recorded position, and N is read from that text;
//   - fallback, should the text ever change: a toml.Unmarshaler probe that
//     always fails, which the library wraps in a toml.ParseError whose
//     Position.Line is the key's line (exact, but it costs a scan of the
//     whole file per lookup, hence only the fallback).
//
// TestConfigLineProbe pins both, so a library upgrade that breaks them fails
// a test rather than silently dropping line numbers. The line recorded is
// the line of the value's start for `key = value`, the line of the key for
// keys inside inline tables and the header line for [tables]. Tables that
// only exist implicitly (the "gates" of a lone [gates.foo] header, the "foo"
// of a dotted key foo.paused = true) have no position; for those lineOfDeep
// uses the first line of anything defined inside them.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Load reads and validates the config at path.
//
// A missing file is an error unless missingOK is true, in which case Load
// returns DefaultConfig() (with Path ""): pass missingOK only for the
// default path, so that a config named explicitly is never silently
// ignored. A dangling symlink is never "missing": it is an error, since
// somebody meant a config to be there. Symlinks are otherwise followed (and
// Path stays as given). The file must be a regular file of at most
// MaxConfigBytes.
//
// On success the Config satisfies Validate. Every error is a single line
// that starts with "config PATH" and, where the problem is in the file, says
// the line and the key (see Parse).
func Load(path string, missingOK bool) (*gate.Config, error) {
	data, err := gate.ReadConfig(path, missingOK)
	if err != nil || data == nil {
		if err == nil {
			return gate.DefaultConfig(), nil
		}
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a config held in memory; path is only used in
// error messages and as Config.Path.
//
// Unknown keys (at any level, including inside gate tables), values of the
// wrong type and invalid values (durations that do not parse or are not
// positive, skip codes outside 0..255, too small histories or log sizes,
// relative legacy paths, gate names that CheckName refuses) are errors. When
// a file has several problems, the error reports the first one by line and
// how many more there are. Errors read like
//
//	config /etc/x.toml line 7: unknown key gates.foo.pausd; did you mean paused?
//	config /etc/x.toml line 3: gates.foo.interval: "30x" is not a duration (e.g. "30m")
//
// always start with "config ", are a single line, and give the line (and,
// for anything but a TOML syntax error, the key) unless the library has no
// position for it. Parse never panics: should the TOML library panic, that
// is returned as an error too. On success the Config satisfies Validate.
func Parse(path string, data []byte) (cfg *gate.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg = nil
			err = fmt.Errorf("%s: the TOML library failed on this file (%s); please report this, with the file",
				safetext.Where(path, 0), safetext.Line(fmt.Sprint(r)))
		}
	}()
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %s (TOML syntax error; fix that line)",
				safetext.Where(path, cfgSyntaxLine(data, pe.Position)), safetext.Line(pe.Message))
		}
		return nil, fmt.Errorf("%s: %s", safetext.Where(path, 0), safetext.Line(strings.TrimPrefix(err.Error(), "toml: ")))
	}
	p := &cfgParser{path: path, md: &md, data: data}
	cfg = gate.DefaultConfig()
	cfg.Path = path
	p.top(cfg, top)
	if err := p.err(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		// Cannot happen: the walk applies Validate's table of keys, and
		// more. Kept so that Parse's guarantee does not rest on that
		// reasoning alone.
		return nil, err
	}
	return cfg, nil
}

// cfgSyntaxLine returns the line of a syntax error. The library's
// Position.Line is one too far when the error is at a line break (it has
// already counted it: "[gates.x" + newline is reported at line 2), so the
// line is recounted from the error's byte offset, which is relative to the
// input without a byte order mark. Should the two disagree by more than
// that, the library's line is kept.
func cfgSyntaxLine(data []byte, pos toml.Position) int {
	s := string(data)
	switch {
	case strings.HasPrefix(s, "\xef\xbb\xbf"):
		s = s[3:]
	case strings.HasPrefix(s, "\xff\xfe"), strings.HasPrefix(s, "\xfe\xff"):
		s = s[2:]
	}
	if pos.Start < 0 || pos.Start > len(s) {
		return pos.Line
	}
	n := strings.Count(s[:pos.Start], "\n") + 1
	if n == pos.Line || n == pos.Line-1 {
		return n
	}
	return pos.Line
}

// cfgParser walks a decoded file and collects its problems.
type cfgParser struct {
	path  string
	md    *toml.MetaData
	data  []byte // the file, for the lines of [[array]] tables (arrayLines)
	probs []cfgProblem
}

type cfgProblem struct {
	line int
	msg  string // without the "config PATH line N: " prefix
}

func (p *cfgParser) addf(line int, format string, args ...any) {
	p.probs = append(p.probs, cfgProblem{line, fmt.Sprintf(format, args...)})
}

// err returns the first problem by line (problems without a line last), and
// how many more there are.
func (p *cfgParser) err() error {
	if len(p.probs) == 0 {
		return nil
	}
	sort.SliceStable(p.probs, func(i, j int) bool {
		a, b := p.probs[i].line, p.probs[j].line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
	first := p.probs[0]
	msg := safetext.Where(p.path, first.line) + ": " + safetext.Line(first.msg)
	switch n := len(p.probs) - 1; n {
	case 0:
	case 1:
		msg += " (and 1 more problem)"
	default:
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return errors.New(msg)
}

// errCfgProbe is returned by cfgLineProbe.
var errCfgProbe = errors.New("cron-gate line probe")

// cfgLineProbe is a decoding target that refuses every value, so that the
// library reports the position of the key being decoded.
type cfgLineProbe struct{}

// UnmarshalTOML implements toml.Unmarshaler by always failing.
func (*cfgLineProbe) UnmarshalTOML(any) error { return errCfgProbe }

// lineOf returns the line at which the library recorded the key prim was
// decoded from, or 0 if it has none (see the comment at the top).
func (p *cfgParser) lineOf(prim toml.Primitive) int {
	var ch chan struct{}
	if err := p.md.PrimitiveDecode(prim, &ch); err != nil {
		if rest, ok := strings.CutPrefix(err.Error(), "toml: line "); ok {
			if i := strings.IndexByte(rest, ' '); i > 0 {
				if n, err := strconv.Atoi(rest[:i]); err == nil && n > 0 {
					return n
				}
			}
		}
		if strings.HasPrefix(err.Error(), "toml: (last key ") {
			return 0 // the library has no position for this key
		}
	}
	var pe toml.ParseError
	if err := p.md.PrimitiveDecode(prim, &cfgLineProbe{}); errors.As(err, &pe) && pe.Position.Line > 0 {
		return pe.Position.Line
	}
	return 0
}

// lineOfDeep is lineOf, but for a key without a position of its own (an
// implicit table), the smallest line of anything inside it.
func (p *cfgParser) lineOfDeep(prim toml.Primitive) int {
	return p.lineOfDepth(prim, 0)
}

func (p *cfgParser) lineOfDepth(prim toml.Primitive, depth int) int {
	if l := p.lineOf(prim); l > 0 || depth > 32 {
		return l
	}
	var sub map[string]toml.Primitive
	if err := p.md.PrimitiveDecode(prim, &sub); err != nil {
		return 0
	}
	best := 0
	for _, v := range sub {
		if l := p.lineOfDepth(v, depth+1); l > 0 && (best == 0 || l < best) {
			best = l
		}
	}
	return best
}

// value decodes prim into a plain Go value: string, int64, float64, bool,
// time.Time, []any, map[string]any or []map[string]any.
func (p *cfgParser) value(prim toml.Primitive) any {
	var v any
	if err := p.md.PrimitiveDecode(prim, &v); err != nil {
		return nil
	}
	return v
}

// table decodes prim as a table. It reports a problem and returns ok=false
// if the value is not a table.
func (p *cfgParser) table(prim toml.Primitive, key, hint string) (map[string]toml.Primitive, bool) {
	v := p.value(prim)
	if _, ok := v.(map[string]any); !ok {
		p.addf(p.lineOfDeep(prim), "%s: must be a table (%s), not %s", key, hint, cfgDescribe(v))
		return nil, false
	}
	var m map[string]toml.Primitive
	if err := p.md.PrimitiveDecode(prim, &m); err != nil {
		p.addf(p.lineOfDeep(prim), "%s: must be a table (%s): %s", key, hint, strings.TrimPrefix(err.Error(), "toml: "))
		return nil, false
	}
	return m, true
}

// cfgSortedKeys returns m's keys in a fixed order, so that the walk (and the
// numbering of problems) does not depend on map order.
func cfgSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keyLines are where a table's keys are, for messages.
type keyLines struct {
	key   func(k string) int // the line of key k
	deep  func(k string) int // the same for an unknown key, which may be an implicit table
	table func() int         // the table's line, for its rule's problems about no key in particular
}

// linesOf is keyLines for a table whose keys have the library's positions.
func (p *cfgParser) linesOf(keys map[string]toml.Primitive, table func() int) keyLines {
	return keyLines{
		key:   func(k string) int { return p.lineOf(keys[k]) },
		deep:  func(k string) int { return p.lineOfDeep(keys[k]) },
		table: table,
	}
}

// given is gate.Given for a table of the file: the keys written in it.
type given map[string]toml.Primitive

func (g given) Has(k string) bool { _, ok := g[k]; return ok }
func (g given) Any() bool         { return len(g) > 0 }

// decodeTable walks one table of the file with its table of keys (package
// gate, keys.go): each key's value is type-checked (decodeValue), checked
// by the key's own checks and set in dst; then the table's Defaults and
// Rule are applied. name prefixes the keys in messages ("" at the top
// level). Keys that are tables themselves (no Set) are handed to sub.
func decodeTable[T any](p *cfgParser, tb *gate.Table[T], keys map[string]toml.Primitive, dst *T,
	name string, lines keyLines, sub func(k string, prim toml.Primitive)) {
	full := func(k string) string {
		if name == "" {
			return safetext.TOMLKey(k)
		}
		return name + "." + safetext.TOMLKey(k)
	}
	for _, k := range cfgSortedKeys(keys) {
		key := tb.Key(k)
		switch {
		case key == nil:
			msg := tb.Unknown(full(k), k)
			if name == "" && k == "gate" {
				msg = "unknown key gate; gates are declared as [gates.NAME]"
			}
			p.addf(lines.deep(k), "%s", msg)
		case key.Set == nil:
			sub(k, keys[k])
		default:
			line := func() int { return lines.key(k) }
			v, ok := p.decodeValue(keys[k], &key.Spec, full(k), line)
			if !ok {
				continue
			}
			probs := key.Problems(v)
			for _, pr := range probs {
				p.addf(line(), "%s%s: %s", full(k), pr.Key, pr.Msg)
			}
			if len(probs) == 0 {
				key.Set(dst, v)
			}
		}
	}
	if tb.Defaults != nil {
		tb.Defaults(dst, given(keys))
	}
	if tb.Rule == nil {
		return
	}
	for _, pr := range tb.Rule(dst, given(keys)) {
		if _, ok := keys[pr.Key]; ok && pr.Key != "" {
			p.addf(lines.key(pr.Key), "%s: %s", full(pr.Key), pr.Msg)
		} else {
			p.addf(lines.table(), "%s: %s", name, pr.Msg)
		}
	}
}

// decodeValue reads a key's value as its kind asks: the TOML type, and for
// a duration its syntax. A value of another type is reported in our own
// words, with the key and its line.
func (p *cfgParser) decodeValue(prim toml.Primitive, s *gate.Spec, key string, line func() int) (gate.Value, bool) {
	v := p.value(prim)
	bad := func(format string, args ...any) (gate.Value, bool) {
		p.addf(line(), format, args...)
		return gate.Value{}, false
	}
	switch s.Kind {
	case gate.KindBool:
		if b, ok := v.(bool); ok {
			return gate.Value{B: b}, true
		}
		return bad("%s: must be true or false, not %s", key, cfgDescribe(v))
	case gate.KindInt:
		if n, ok := v.(int64); ok {
			return gate.Value{N: n}, true
		}
		return bad("%s: must be an integer, not %s", key, cfgDescribe(v))
	case gate.KindNumber:
		switch v := v.(type) {
		case int64:
			return gate.Value{F: float64(v)}, true
		case float64:
			return gate.Value{F: v}, true
		}
		return bad("%s: must be a number like %s, not %s", key, s.Example, cfgDescribe(v))
	case gate.KindDuration:
		str, ok := v.(string)
		if !ok {
			return bad("%s: must be a duration string like %s, not %s", key, s.Example, cfgDescribe(v))
		}
		d, err := runner.ParseDuration(str)
		if err != nil {
			return bad("%s: %s is not a duration (e.g. %s, or 3d for days)", key, safetext.Quote(str), s.Example)
		}
		return gate.Value{S: str, D: d}, true
	case gate.KindPaths, gate.KindURLs, gate.KindArgv:
		what, elem := "an array of strings", "a string"
		switch s.Kind {
		case gate.KindPaths:
			what, elem = "an array of absolute paths", "a path"
		case gate.KindURLs:
			what = "an array of URLs"
		}
		arr, ok := v.([]any)
		if !ok {
			return bad("%s: must be %s like %s, not %s", key, what, s.Example, cfgDescribe(v))
		}
		out := make([]string, 0, len(arr))
		for i, e := range arr {
			if str, ok := e.(string); ok {
				out = append(out, str)
			} else {
				bad("%s[%d]: must be %s in quotes, not %s", key, i, elem, cfgDescribe(e))
			}
		}
		return gate.Value{L: out}, len(out) == len(arr)
	}
	if str, ok := v.(string); ok {
		return gate.Value{S: str}, true
	}
	return bad("%s: must be a string in quotes, not %s", key, cfgDescribe(v))
}

func (p *cfgParser) top(cfg *gate.Config, top map[string]toml.Primitive) {
	decodeTable(p, &gate.TopTable, top, cfg, "", p.linesOf(top, nil), func(k string, prim toml.Primitive) {
		switch k {
		case "gates":
			p.gates(cfg, prim)
		case "check":
			subTable(p, prim, &gate.CheckTable, &cfg.Check)
		case "notify":
			p.notify(cfg, prim)
		case "serve":
			subTable(p, prim, &gate.ServeTable, &cfg.Serve)
		case "etcd":
			subTable(p, prim, &gate.EtcdTable, &cfg.Etcd)
		default: // a table added to gate.TopTable without a decoder here (TestConfigTablesDecoded)
			p.addf(p.lineOfDeep(prim), "%s: cron-gate cannot decode this table; please report this", safetext.TOMLKey(k))
		}
	})
}

// subTable decodes a [name] table into dst.
func subTable[T any](p *cfgParser, prim toml.Primitive, tb *gate.Table[T], dst *T) {
	keys, ok := p.table(prim, tb.Name, "["+tb.Name+"]")
	if !ok {
		return
	}
	decodeTable(p, tb, keys, dst, tb.Name, p.linesOf(keys, func() int { return p.lineOf(prim) }), nil)
}

func (p *cfgParser) gates(cfg *gate.Config, prim toml.Primitive) {
	gates, ok := p.table(prim, "gates", "[gates.NAME] tables")
	if !ok {
		return
	}
	for _, name := range cfgSortedKeys(gates) {
		gprim := gates[name]
		gk := safetext.TOMLKey("gates", name)
		if err := gate.CheckName(name); err != nil {
			p.addf(p.lineOfDeep(gprim), "%s: %s", gk, err)
			continue
		}
		keys, ok := p.table(gprim, gk, "["+gk+"]")
		if !ok {
			continue
		}
		g := &gate.GateConfig{Name: name}
		decodeTable(p, &gate.GateTable, keys, g, gk, p.linesOf(keys, func() int { return p.lineOfDeep(gprim) }), nil)
		if kp, ok := keys["paused"]; ok {
			g.PausedLine = p.lineOf(kp)
		}
		cfg.Gates[name] = g
	}
}

// notify walks the [[notify]] array of tables.
func (p *cfgParser) notify(cfg *gate.Config, prim toml.Primitive) {
	v := p.value(prim)
	okType := false
	switch v := v.(type) {
	case []map[string]any:
		okType = true
	case []any: // an inline array: [{...}, {...}], or []
		okType = true
		for _, e := range v {
			if _, isMap := e.(map[string]any); !isMap {
				okType = false
			}
		}
	}
	if !okType {
		p.addf(p.lineOfDeep(prim), "notify: must be an array of tables ([[notify]]), not %s", cfgDescribe(v))
		return
	}
	var tables []map[string]toml.Primitive
	if err := p.md.PrimitiveDecode(prim, &tables); err != nil {
		p.addf(p.lineOfDeep(prim), "notify: must be an array of tables ([[notify]]): %s", strings.TrimPrefix(err.Error(), "toml: "))
		return
	}
	// The library records one position per key path, so the keys of all
	// [[notify]] tables share one (the last table's): their lines are
	// found in the text instead (arrayLines), and the library's are used
	// only when that fails (an inline array).
	hdrs := p.arrayLines("notify")
	if len(hdrs) != len(tables) {
		hdrs = nil
	}
	for i, keys := range tables {
		n := gate.NotifyConfig{}
		lineOf := func(k string) int {
			if hdrs != nil {
				if l := p.keyLineAfter(hdrs[i], k); l > 0 {
					return l
				}
				return hdrs[i]
			}
			return p.lineOf(keys[k])
		}
		if hdrs != nil {
			n.Line = hdrs[i]
		} else {
			for _, k := range cfgSortedKeys(keys) {
				if l := p.lineOf(keys[k]); l > 0 && (n.Line == 0 || l < n.Line) {
					n.Line = l
				}
			}
		}
		decodeTable(p, &gate.NotifyTable, keys, &n, fmt.Sprintf("notify[%d]", i),
			keyLines{key: lineOf, deep: lineOf, table: func() int { return n.Line }}, nil)
		cfg.Notify = append(cfg.Notify, n)
	}
}

// arrayLines returns the lines of the file's [[name]] headers, in order.
func (p *cfgParser) arrayLines(name string) []int {
	var out []int
	p.eachLine(func(n int, line string) bool {
		if l, ok := strings.CutPrefix(line, "[["); ok {
			if h, _, ok := strings.Cut(l, "]]"); ok && strings.TrimSpace(h) == name {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}

// keyLineAfter returns the line of `key = ...` in the table whose header
// is at line hdr (before the next header), or 0.
func (p *cfgParser) keyLineAfter(hdr int, key string) int {
	found := 0
	p.eachLine(func(n int, line string) bool {
		if n <= hdr {
			return true
		}
		if strings.HasPrefix(line, "[") {
			return false
		}
		if k, _, ok := strings.Cut(line, "="); ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			found = n
			return false
		}
		return true
	})
	return found
}

// eachLine calls fn with each line's number and its text without leading
// white space, until fn returns false. The inside of multi-line strings is
// skipped (roughly: a line with an odd number of triple quotes of one kind
// opens or closes one).
func (p *cfgParser) eachLine(fn func(n int, line string) bool) {
	inString := ""
	for i, line := range strings.Split(string(p.data), "\n") {
		if inString == "" && !fn(i+1, strings.TrimSpace(line)) {
			return
		}
		for _, q := range []string{`"""`, `'''`} {
			if (inString == "" || inString == q) && strings.Count(line, q)%2 == 1 {
				if inString == "" {
					inString = q
				} else {
					inString = ""
				}
			}
		}
	}
}

// cfgDescribe names the TOML type of a decoded value for error messages,
// with the value itself when it is short and scalar.
func cfgDescribe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string (" + safetext.Quote(v) + ")"
	case int64:
		return "an integer (" + strconv.FormatInt(v, 10) + ")"
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "a float (" + strconv.FormatFloat(v, 'g', -1, 64) + ")"
		}
		return "a float (" + strconv.FormatFloat(v, 'g', 10, 64) + ")"
	case bool:
		return "a boolean (" + strconv.FormatBool(v) + ")"
	case time.Time:
		return "a date/time"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "an unreadable value"
	}
	return fmt.Sprintf("a value of type %T", v)
}
