package gate

// The TOML configuration file.
//
// Decoding. The file is decoded by github.com/BurntSushi/toml into
// map[string]toml.Primitive and then walked by hand, one key at a time:
// every leaf is decoded into an `any` and type-checked here, so a value of
// the wrong type is reported with its key and line in our own words instead
// of the library's "incompatible types" message, and unknown keys are found
// at every level without relying on MetaData.Undecoded.
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
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// DefaultConfigPath is the configuration file read when none is named.
const DefaultConfigPath = "/etc/cron-gate/config.toml"

// DefaultStateDir is the state directory for root when neither the config
// nor $CRON_GATE_STATE_DIR sets one (StateDirFor has the whole rule).
const DefaultStateDir = "/var/lib/cron-gate"

// DefaultSkipCode is the exit status cron-gate uses, unless configured
// otherwise, when it decides not to run a command (75 is EX_TEMPFAIL).
const DefaultSkipCode = 75

// MinHistory is the smallest accepted `history`, global or per gate.
const MinHistory = 10

// MaxHistory is the largest accepted `history`, global or per gate; it keeps
// the value meaningful and representable as an int on every platform.
const MaxHistory = 100_000_000

// MinLogMaxBytes is the smallest accepted `log_max_bytes`.
const MinLogMaxBytes = 4096

// MaxConfigBytes is the largest config file Load accepts. A real config is a
// few kilobytes; anything this large is the wrong file.
const MaxConfigBytes = 4 << 20

// Config is cron-gate's configuration, as read from a TOML file.
//
// A Config returned by Load, Parse or DefaultConfig satisfies Validate:
// StateDir is absolute or empty, SkipCode is in 0..255, History in
// MinHistory..MaxHistory, Gates is non-nil, and every entry of Gates is
// non-nil, is keyed by a name CheckName accepts and has Name set to that key.
// A Config is not modified by its methods and may be shared by goroutines
// once loaded, as long as nobody modifies it.
type Config struct {
	Path     string                 // file it came from ("" if none)
	StateDir string                 // `state_dir`; absolute, or "" when not set (StateDirFor decides then)
	SkipCode int                    // `skip_code`, default DefaultSkipCode, 0..255
	History  int                    // `history`, records kept per gate before rotation, default DefaultHistory, >= MinHistory
	Gates    map[string]*GateConfig // `[gates.NAME]`, by NAME
}

// GateConfig is the configuration of one gate, a `[gates.NAME]` table.
//
// Zero values mean "not set": Interval 0 is no interval, SkipCode nil and
// History 0 defer to the global settings (use Config.SkipCodeFor and
// Config.HistoryFor rather than reading them directly).
type GateConfig struct {
	Name           string        // the NAME of [gates.NAME]; passes CheckName
	Paused         bool          // `paused`
	Reason         string        // `reason`: why it is paused, for people
	LegacyLocks    []string      // `legacy_locks`: absolute paths
	LegacyPidfiles []string      // `legacy_pidfiles`: absolute paths
	Interval       time.Duration // `interval`, a Go duration string like "30m"; > 0 when set, 0 when not
	SkipCode       *int          // `skip_code` per gate, 0..255, overrides the global; nil when not set
	History        int           // `history` per gate, >= MinHistory; 0 = use the global
	LogOutput      bool          // `log_output`: keep the command's output in a per-gate log
	LogMaxBytes    int64         // `log_max_bytes`, >= MinLogMaxBytes; DefaultLogMaxBytes when LogOutput and not set, else 0 when not set
	PausedLine     int           // line of the `paused` key in the file, 0 if absent (for the editor and messages)
}

// Keys accepted at the top level and in a gate table, in documentation
// order (used in "unknown key" messages).
var (
	cfgTopKeys  = []string{"state_dir", "skip_code", "history", "gates"}
	cfgGateKeys = []string{"paused", "reason", "interval", "legacy_locks", "legacy_pidfiles",
		"skip_code", "history", "log_output", "log_max_bytes"}
)

// DefaultConfig returns the configuration used when there is no file: the
// default state directory, skip code and history, and no gates. Every call
// returns a new Config.
func DefaultConfig() *Config {
	return &Config{
		SkipCode: DefaultSkipCode,
		History:  DefaultHistory,
		Gates:    map[string]*GateConfig{},
	}
}

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
func Load(path string, missingOK bool) (*Config, error) {
	data, err := readConfig(path, missingOK)
	if err != nil || data == nil {
		if err == nil {
			return DefaultConfig(), nil
		}
		return nil, err
	}
	return Parse(path, data)
}

// readConfig reads the config file's bytes; nil, nil for a missing file
// when missingOK.
func readConfig(path string, missingOK bool) ([]byte, error) {
	where := cfgWhere(path, 0)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(path)
				return nil, fmt.Errorf("%s: is a symlink to %s, which does not exist; fix or remove the symlink",
					where, cfgQuotePath(target))
			}
			if missingOK {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: file does not exist; check the path or create the file", where)
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%s: permission denied; run as a user who can read it, or fix its permissions", where)
		}
		return nil, fmt.Errorf("%s: cannot open: %s", where, cfgOneLine(cfgUnwrapPath(err).Error()))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: cannot stat: %s", where, cfgOneLine(cfgUnwrapPath(err).Error()))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: is not a regular file (%s); point to the TOML config file", where, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %s", where, cfgOneLine(cfgUnwrapPath(err).Error()))
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%s: is larger than %d bytes; is this the right file?", where, MaxConfigBytes)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
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
func Parse(path string, data []byte) (cfg *Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg = nil
			err = fmt.Errorf("%s: the TOML library failed on this file (%s); please report this, with the file",
				cfgWhere(path, 0), cfgOneLine(fmt.Sprint(r)))
		}
	}()
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %s (TOML syntax error; fix that line)",
				cfgWhere(path, cfgSyntaxLine(data, pe.Position)), cfgOneLine(pe.Message))
		}
		return nil, fmt.Errorf("%s: %s", cfgWhere(path, 0), cfgOneLine(strings.TrimPrefix(err.Error(), "toml: ")))
	}
	p := &cfgParser{path: path, md: &md}
	cfg = DefaultConfig()
	cfg.Path = path
	p.top(cfg, top)
	if err := p.err(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		// Cannot happen: the walk checks more than Validate does. Kept so
		// that Parse's guarantee does not rest on that reasoning alone.
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

// Validate checks the invariants that Load and Parse guarantee (see Config
// and GateConfig), for a Config built or changed in code. Its error is a
// single line starting with "config ".
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("config: no configuration (nil); load one with Load")
	}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", cfgWhere(c.Path, 0), key, fmt.Sprintf(format, args...))
	}
	if msg := cfgCheckAbs(c.StateDir); c.StateDir != "" && msg != "" {
		return bad("state_dir", "%s", msg)
	}
	if c.SkipCode < 0 || c.SkipCode > 255 {
		return bad("skip_code", "%d is out of range; use 0 to 255", c.SkipCode)
	}
	if c.History < MinHistory || c.History > MaxHistory {
		return bad("history", "%d is out of range; use %d to %d", c.History, MinHistory, MaxHistory)
	}
	if c.Gates == nil {
		return fmt.Errorf("%s: Gates is nil; use an empty map", cfgWhere(c.Path, 0))
	}
	names := make([]string, 0, len(c.Gates))
	for name := range c.Gates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := c.Gates[name]
		k := cfgKey("gates", name)
		if err := CheckName(name); err != nil {
			return bad(k, "%s", err)
		}
		if g == nil {
			return bad(k, "is nil; remove it or give it a GateConfig")
		}
		if g.Name != name {
			return bad(k, "Name is %q, want %q", g.Name, name)
		}
		for i, l := range g.LegacyLocks {
			if msg := cfgCheckAbs(l); msg != "" {
				return bad(fmt.Sprintf("%s.legacy_locks[%d]", k, i), "%s", msg)
			}
		}
		for i, l := range g.LegacyPidfiles {
			if msg := cfgCheckAbs(l); msg != "" {
				return bad(fmt.Sprintf("%s.legacy_pidfiles[%d]", k, i), "%s", msg)
			}
		}
		if g.Interval < 0 {
			return bad(k+".interval", "%s is negative; use a positive duration or 0 for none", g.Interval)
		}
		if g.SkipCode != nil && (*g.SkipCode < 0 || *g.SkipCode > 255) {
			return bad(k+".skip_code", "%d is out of range; use 0 to 255", *g.SkipCode)
		}
		if g.History != 0 && (g.History < MinHistory || g.History > MaxHistory) {
			return bad(k+".history", "%d is out of range; use %d to %d, or 0 for the global history", g.History, MinHistory, MaxHistory)
		}
		if g.LogMaxBytes != 0 && g.LogMaxBytes < MinLogMaxBytes {
			return bad(k+".log_max_bytes", "%d is too small; use at least %d", g.LogMaxBytes, MinLogMaxBytes)
		}
		if g.LogOutput && g.LogMaxBytes == 0 {
			return bad(k+".log_max_bytes", "is 0 while log_output is true; use at least %d", MinLogMaxBytes)
		}
		if g.PausedLine < 0 {
			return bad(k+".paused", "PausedLine %d is negative", g.PausedLine)
		}
	}
	return nil
}

// Gate returns the configuration of the named gate: the declared one, or,
// for a gate the config does not declare, a new default GateConfig with
// only Name set (gates need not be declared to run). It never returns nil,
// also for a nil Config. The result for a declared gate is shared with the
// Config: do not modify it.
func (c *Config) Gate(name string) *GateConfig {
	if c != nil {
		if g := c.Gates[name]; g != nil {
			return g
		}
	}
	return &GateConfig{Name: name}
}

// SkipCodeFor returns the exit status to use when the named gate does not
// run its command: the gate's own `skip_code` if set, else the global one
// (DefaultSkipCode for a nil Config). For a validated Config it is in 0..255.
func (c *Config) SkipCodeFor(name string) int {
	if c == nil {
		return DefaultSkipCode
	}
	if g := c.Gates[name]; g != nil && g.SkipCode != nil {
		return *g.SkipCode
	}
	return c.SkipCode
}

// HistoryFor returns how many records the named gate keeps before rotation:
// the gate's own `history` if set, else the global one (DefaultHistory for a
// nil Config). For a validated Config it is at least MinHistory.
func (c *Config) HistoryFor(name string) int {
	if c == nil {
		return DefaultHistory
	}
	if g := c.Gates[name]; g != nil && g.History != 0 {
		return g.History
	}
	return c.History
}

// cfgParser walks a decoded file and collects its problems.
type cfgParser struct {
	path  string
	md    *toml.MetaData
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
	msg := cfgWhere(p.path, first.line) + ": " + cfgOneLine(first.msg)
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

func (p *cfgParser) top(cfg *Config, top map[string]toml.Primitive) {
	for _, k := range cfgSortedKeys(top) {
		prim := top[k]
		switch k {
		case "state_dir":
			if s, ok := p.str(prim, k); ok {
				if msg := cfgCheckAbs(s); msg != "" {
					p.addf(p.lineOf(prim), "state_dir: %s", msg)
				} else {
					cfg.StateDir = s
				}
			}
		case "skip_code":
			if n, ok := p.skipCode(prim, k); ok {
				cfg.SkipCode = n
			}
		case "history":
			if n, ok := p.history(prim, k); ok {
				cfg.History = n
			}
		case "gates":
			p.gates(cfg, prim)
		default:
			p.unknown(prim, nil, k, cfgTopKeys)
		}
	}
}

func (p *cfgParser) gates(cfg *Config, prim toml.Primitive) {
	gates, ok := p.table(prim, "gates", "[gates.NAME] tables")
	if !ok {
		return
	}
	for _, name := range cfgSortedKeys(gates) {
		gprim := gates[name]
		gk := cfgKey("gates", name)
		if err := CheckName(name); err != nil {
			p.addf(p.lineOfDeep(gprim), "%s: %s", gk, err)
			continue
		}
		keys, ok := p.table(gprim, gk, "["+gk+"]")
		if !ok {
			continue
		}
		g := &GateConfig{Name: name}
		logMaxSet := false
		for _, k := range cfgSortedKeys(keys) {
			kp := keys[k]
			key := gk + "." + cfgKey(k)
			switch k {
			case "paused":
				if b, ok := p.boolean(kp, key); ok {
					g.Paused = b
				}
				g.PausedLine = p.lineOf(kp)
			case "reason":
				if s, ok := p.str(kp, key); ok {
					g.Reason = s
				}
			case "interval":
				if d, ok := p.interval(kp, key); ok {
					g.Interval = d
				}
			case "legacy_locks":
				g.LegacyLocks = p.paths(kp, key, "/run/NAME.lock")
			case "legacy_pidfiles":
				g.LegacyPidfiles = p.paths(kp, key, "/run/NAME.pid")
			case "skip_code":
				if n, ok := p.skipCode(kp, key); ok {
					g.SkipCode = &n
				}
			case "history":
				if n, ok := p.history(kp, key); ok {
					g.History = n
				}
			case "log_output":
				if b, ok := p.boolean(kp, key); ok {
					g.LogOutput = b
				}
			case "log_max_bytes":
				if n, ok := p.integer(kp, key); ok {
					if n < MinLogMaxBytes {
						p.addf(p.lineOf(kp), "%s: %d is too small; use at least %d", key, n, MinLogMaxBytes)
					} else {
						g.LogMaxBytes = n
						logMaxSet = true
					}
				}
			default:
				p.unknown(kp, []string{"gates", name}, k, cfgGateKeys)
			}
		}
		if g.LogOutput && !logMaxSet {
			g.LogMaxBytes = DefaultLogMaxBytes
		}
		cfg.Gates[name] = g
	}
}

func (p *cfgParser) unknown(prim toml.Primitive, parent []string, k string, known []string) {
	full := cfgKey(append(slices.Clone(parent), k)...)
	msg := "unknown key " + full
	if s := cfgSuggest(k, known); s != "" {
		msg += "; did you mean " + s + "?"
	} else {
		msg += "; the keys allowed here are " + strings.Join(known, ", ")
	}
	if len(parent) == 0 && k == "gate" {
		msg = "unknown key gate; gates are declared as [gates.NAME]"
	}
	p.addf(p.lineOfDeep(prim), "%s", msg)
}

func (p *cfgParser) str(prim toml.Primitive, key string) (string, bool) {
	v := p.value(prim)
	s, ok := v.(string)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be a string in quotes, not %s", key, cfgDescribe(v))
	}
	return s, ok
}

func (p *cfgParser) boolean(prim toml.Primitive, key string) (bool, bool) {
	v := p.value(prim)
	b, ok := v.(bool)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be true or false, not %s", key, cfgDescribe(v))
	}
	return b, ok
}

func (p *cfgParser) integer(prim toml.Primitive, key string) (int64, bool) {
	v := p.value(prim)
	n, ok := v.(int64)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be an integer, not %s", key, cfgDescribe(v))
	}
	return n, ok
}

func (p *cfgParser) skipCode(prim toml.Primitive, key string) (int, bool) {
	n, ok := p.integer(prim, key)
	if !ok {
		return 0, false
	}
	if n < 0 || n > 255 {
		p.addf(p.lineOf(prim), "%s: %d is out of range; use an exit status from 0 to 255", key, n)
		return 0, false
	}
	return int(n), true
}

func (p *cfgParser) history(prim toml.Primitive, key string) (int, bool) {
	n, ok := p.integer(prim, key)
	if !ok {
		return 0, false
	}
	if n < MinHistory {
		p.addf(p.lineOf(prim), "%s: %d is too small; keep at least %d records", key, n, MinHistory)
		return 0, false
	}
	if n > MaxHistory {
		p.addf(p.lineOf(prim), "%s: %d is too large; keep at most %d records", key, n, MaxHistory)
		return 0, false
	}
	return int(n), true
}

func (p *cfgParser) interval(prim toml.Primitive, key string) (time.Duration, bool) {
	v := p.value(prim)
	s, ok := v.(string)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be a duration string like \"30m\", not %s", key, cfgDescribe(v))
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.addf(p.lineOf(prim), "%s: %s is not a duration (e.g. \"30m\")", key, cfgShortQuote(s))
		return 0, false
	}
	if d <= 0 {
		p.addf(p.lineOf(prim), "%s: %s is not positive; use a duration like \"30m\", or remove the key", key, cfgShortQuote(s))
		return 0, false
	}
	return d, true
}

func (p *cfgParser) paths(prim toml.Primitive, key, example string) []string {
	v := p.value(prim)
	arr, ok := v.([]any)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be an array of absolute paths like [%q], not %s", key, example, cfgDescribe(v))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			p.addf(p.lineOf(prim), "%s[%d]: must be a path in quotes, not %s", key, i, cfgDescribe(e))
			continue
		}
		if msg := cfgCheckAbs(s); msg != "" {
			p.addf(p.lineOf(prim), "%s[%d]: %s", key, i, msg)
			continue
		}
		out = append(out, s)
	}
	return out
}

// cfgCheckAbs returns why s is not an acceptable absolute path, or "".
func cfgCheckAbs(s string) string {
	switch {
	case s == "":
		return "is empty; write an absolute path starting with /"
	case strings.IndexByte(s, 0) >= 0:
		return cfgShortQuote(s) + " contains a NUL byte; write a real path"
	case !filepath.IsAbs(s):
		return cfgShortQuote(s) + " is not an absolute path; write the full path starting with /"
	}
	return ""
}

// cfgDescribe names the TOML type of a decoded value for error messages,
// with the value itself when it is short and scalar.
func cfgDescribe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string (" + cfgShortQuote(v) + ")"
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

// cfgKey formats a dotted TOML key the way it would be written in a file:
// bare parts as they are, others quoted (with Go escapes, so the result is
// always one printable line).
func cfgKey(parts ...string) string {
	var b strings.Builder
	for i, s := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if cfgIsBare(s) {
			b.WriteString(s)
		} else {
			b.WriteString(cfgShortQuote(s))
		}
	}
	return b.String()
}

func cfgIsBare(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// cfgSuggest returns the known key closest to k, if it is close enough to
// be a typo.
func cfgSuggest(k string, known []string) string {
	if len(k) > 64 {
		return ""
	}
	best, bestD := "", 3
	for _, c := range known {
		d := cfgEditDistance(strings.ToLower(k), c)
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func cfgEditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// cfgWhere is the prefix of every config error: "config PATH line N".
func cfgWhere(path string, line int) string {
	s := "config"
	if path != "" {
		s += " " + cfgQuotePath(path)
	}
	if line > 0 {
		s += " line " + strconv.Itoa(line)
	}
	return s
}

// cfgQuotePath returns path as is when it is plain printable text without
// spaces, else quoted, so that a message stays one unambiguous line.
func cfgQuotePath(path string) string {
	if path == "" || !utf8.ValidString(path) {
		return strconv.Quote(path)
	}
	for _, r := range path {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(path)
		}
	}
	return path
}

// cfgShortQuote quotes s with Go escapes (always a single printable line),
// eliding the middle of long strings.
func cfgShortQuote(s string) string {
	const keep = 40
	if len(s) <= 2*keep+10 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]) + "..." + strconv.Quote(s[len(s)-keep:])
}

// cfgOneLine replaces line breaks and other control characters in a message
// from elsewhere (the TOML library, the OS) so that it stays on one line.
func cfgOneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// cfgUnwrapPath strips the *fs.PathError wrapper, whose op and path the
// caller's message already gives.
func cfgUnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
