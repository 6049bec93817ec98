//go:build linux

package gateconf

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
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/cfgtext"
	"github.com/crongate/crongate/internal/suggest"
)

// Keys accepted at the top level and in a gate table, in documentation
// order (used in "unknown key" messages).
var (
	cfgTopKeys  = []string{"state_dir", "skip_code", "history", "gates", "check", "notify", "serve", "etcd"}
	cfgGateKeys = []string{"paused", "reason", "interval", "legacy_locks", "legacy_pidfiles",
		"skip_code", "history", "log_output", "log_max_bytes",
		"systemd_timer", "failure_state_file", "failure_state_key", "healthchecks_url"}
	cfgCheckKeys = []string{"stale_factor", "alert_after", "resume_grace", "crontab_command", "cron_d",
		"systemctl_command", "metrics_file"}
	cfgServeKeys  = []string{"listen", "time_zone", "token_file"}
	cfgEtcdKeys   = []string{"endpoints", "prefix", "timeout", "on_coordinator_down"}
	cfgNotifyKeys = []string{"type", "name", "argv", "url", "timeout", "retries"}
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
				cfgtext.Where(path, 0), cfgtext.OneLine(fmt.Sprint(r)))
		}
	}()
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %s (TOML syntax error; fix that line)",
				cfgtext.Where(path, cfgSyntaxLine(data, pe.Position)), cfgtext.OneLine(pe.Message))
		}
		return nil, fmt.Errorf("%s: %s", cfgtext.Where(path, 0), cfgtext.OneLine(strings.TrimPrefix(err.Error(), "toml: ")))
	}
	p := &cfgParser{path: path, md: &md, data: data}
	cfg = gate.DefaultConfig()
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
	msg := cfgtext.Where(p.path, first.line) + ": " + cfgtext.OneLine(first.msg)
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

func (p *cfgParser) top(cfg *gate.Config, top map[string]toml.Primitive) {
	for _, k := range cfgSortedKeys(top) {
		prim := top[k]
		switch k {
		case "state_dir":
			if s, ok := p.str(prim, k); ok {
				if msg := cfgtext.CheckAbs(s); msg != "" {
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
		case "check":
			p.check(cfg, prim)
		case "notify":
			p.notify(cfg, prim)
		case "serve":
			p.serve(cfg, prim)
		case "etcd":
			p.etcd(cfg, prim)
		default:
			p.unknown(prim, nil, k, cfgTopKeys)
		}
	}
}

func (p *cfgParser) gates(cfg *gate.Config, prim toml.Primitive) {
	gates, ok := p.table(prim, "gates", "[gates.NAME] tables")
	if !ok {
		return
	}
	for _, name := range cfgSortedKeys(gates) {
		gprim := gates[name]
		gk := cfgtext.Key("gates", name)
		if err := gate.CheckName(name); err != nil {
			p.addf(p.lineOfDeep(gprim), "%s: %s", gk, err)
			continue
		}
		keys, ok := p.table(gprim, gk, "["+gk+"]")
		if !ok {
			continue
		}
		g := &gate.GateConfig{Name: name}
		logMaxSet := false
		for _, k := range cfgSortedKeys(keys) {
			kp := keys[k]
			key := gk + "." + cfgtext.Key(k)
			switch k {
			case "paused":
				if b, ok := p.boolean(kp, key); ok {
					g.Paused = b
				}
				g.PausedLine = p.lineOf(kp)
			case "reason":
				if s, ok := p.str(kp, key); ok {
					if err := gate.CheckReason(s); err != nil {
						p.addf(p.lineOf(kp), "%s: %s", key, err)
					}
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
					if n < gate.MinLogMaxBytes {
						p.addf(p.lineOf(kp), "%s: %d is too small; use at least %d", key, n, gate.MinLogMaxBytes)
					} else {
						g.LogMaxBytes = n
						logMaxSet = true
					}
				}
			case "systemd_timer":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgtext.CheckUnit(s); msg != "" {
						p.addf(p.lineOf(kp), "%s: %s", key, msg)
					} else {
						g.SystemdTimer = s
					}
				}
			case "failure_state_file":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgtext.CheckAbs(s); msg != "" {
						p.addf(p.lineOf(kp), "%s: %s", key, msg)
					} else {
						g.FailureStateFile = s
					}
				}
			case "failure_state_key":
				if s, ok := p.str(kp, key); ok {
					if s == "" {
						p.addf(p.lineOf(kp), "%s: is empty; name the key of the worker's state file, e.g. %q", key, gate.DefaultFailureStateKey)
					} else {
						g.FailureStateKey = s
					}
				}
			case "healthchecks_url":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgtext.CheckURL(s); msg != "" {
						p.addf(p.lineOf(kp), "%s: %s", key, msg)
					} else {
						g.HealthchecksURL = s
					}
				}
			default:
				p.unknown(kp, []string{"gates", name}, k, cfgGateKeys)
			}
		}
		if g.LogOutput && !logMaxSet {
			g.LogMaxBytes = gate.DefaultLogMaxBytes
		}
		switch {
		case g.FailureStateFile != "" && g.FailureStateKey == "":
			g.FailureStateKey = gate.DefaultFailureStateKey
		case g.FailureStateFile == "" && g.FailureStateKey != "":
			if kp, ok := keys["failure_state_key"]; ok {
				p.addf(p.lineOf(kp), "%s.failure_state_key: is set without failure_state_file; name the worker's JSON state file too", gk)
			}
			g.FailureStateKey = ""
		}
		cfg.Gates[name] = g
	}
}

func (p *cfgParser) unknown(prim toml.Primitive, parent []string, k string, known []string) {
	full := cfgtext.Key(append(slices.Clone(parent), k)...)
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
	if n < gate.MinHistory {
		p.addf(p.lineOf(prim), "%s: %d is too small; keep at least %d records", key, n, gate.MinHistory)
		return 0, false
	}
	if n > gate.MaxHistory {
		p.addf(p.lineOf(prim), "%s: %d is too large; keep at most %d records", key, n, gate.MaxHistory)
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
		p.addf(p.lineOf(prim), "%s: %s is not a duration (e.g. \"30m\")", key, cfgtext.ShortQuote(s))
		return 0, false
	}
	if d <= 0 {
		p.addf(p.lineOf(prim), "%s: %s is not positive; use a duration like \"30m\", or remove the key", key, cfgtext.ShortQuote(s))
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
		if msg := cfgtext.CheckAbs(s); msg != "" {
			p.addf(p.lineOf(prim), "%s[%d]: %s", key, i, msg)
			continue
		}
		out = append(out, s)
	}
	return out
}

// check walks the [check] table.
func (p *cfgParser) check(cfg *gate.Config, prim toml.Primitive) {
	keys, ok := p.table(prim, "check", "[check]")
	if !ok {
		return
	}
	c := &cfg.Check
	for _, k := range cfgSortedKeys(keys) {
		kp := keys[k]
		key := "check." + cfgtext.Key(k)
		switch k {
		case "stale_factor":
			v := p.value(kp)
			var f float64
			switch v := v.(type) {
			case int64:
				f = float64(v)
			case float64:
				f = v
			default:
				p.addf(p.lineOf(kp), "%s: must be a number like 2.5, not %s", key, cfgDescribe(v))
				continue
			}
			if !(f >= 1 && f <= 1000) {
				p.addf(p.lineOf(kp), "%s: %v is out of range; use 1 to 1000 (stale after this many intervals without a success)", key, f)
				continue
			}
			c.StaleFactor = f
		case "alert_after":
			if n, ok := p.integer(kp, key); ok {
				if n < 1 || n > 100 {
					p.addf(p.lineOf(kp), "%s: %d is out of range; use 1 to 100 (consecutive bad checks before an alert)", key, n)
				} else {
					c.AlertAfter = int(n)
				}
			}
		case "resume_grace":
			v := p.value(kp)
			s, ok := v.(string)
			if !ok {
				p.addf(p.lineOf(kp), "%s: must be a duration string like \"15m\", not %s", key, cfgDescribe(v))
				continue
			}
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				p.addf(p.lineOf(kp), "%s: %s is not a duration of 0 or more (e.g. \"15m\")", key, cfgtext.ShortQuote(s))
				continue
			}
			c.ResumeGrace, c.ResumeGraceSet = d, true
		case "crontab_command":
			if argv, ok := p.argv(kp, key, true, `["crontab", "-l"]`); ok {
				c.CrontabCommand = argv
			}
		case "systemctl_command":
			if argv, ok := p.argv(kp, key, false, `["systemctl"]`); ok {
				c.SystemctlCommand = argv
			}
		case "cron_d":
			c.CronD = p.paths(kp, key, "/etc/cron.d")
		case "metrics_file":
			if s, ok := p.str(kp, key); ok {
				if msg := cfgtext.CheckAbs(s); msg != "" {
					p.addf(p.lineOf(kp), "%s: %s", key, msg)
				} else {
					c.MetricsFile = s
				}
			}
		default:
			p.unknown(kp, []string{"check"}, k, cfgCheckKeys)
		}
	}
}

// serve walks the [serve] table.
func (p *cfgParser) serve(cfg *gate.Config, prim toml.Primitive) {
	keys, ok := p.table(prim, "serve", "[serve]")
	if !ok {
		return
	}
	c := &cfg.Serve
	for _, k := range cfgSortedKeys(keys) {
		kp := keys[k]
		key := "serve." + cfgtext.Key(k)
		s, isStr := "", false
		if k == "listen" || k == "time_zone" || k == "token_file" {
			if s, isStr = p.str(kp, key); !isStr {
				continue
			}
		}
		switch k {
		case "listen":
			if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
				p.addf(p.lineOf(kp), "%s: %s is not host:port (e.g. \"127.0.0.1:8371\")", key, cfgtext.ShortQuote(s))
				continue
			}
			c.Listen = s
		case "time_zone":
			if _, err := time.LoadLocation(s); err != nil || s == "" {
				p.addf(p.lineOf(kp), "%s: %s is not a time zone name (e.g. \"Asia/Seoul\", \"UTC\")", key, cfgtext.ShortQuote(s))
				continue
			}
			c.TimeZone = s
		case "token_file":
			if msg := cfgtext.CheckAbs(s); msg != "" {
				p.addf(p.lineOf(kp), "%s: %s", key, msg)
				continue
			}
			c.TokenFile = s
		default:
			p.unknown(kp, []string{"serve"}, k, cfgServeKeys)
		}
	}
}

// etcd walks the [etcd] table (shared pauses across hosts).
func (p *cfgParser) etcd(cfg *gate.Config, prim toml.Primitive) {
	keys, ok := p.table(prim, "etcd", "[etcd]")
	if !ok {
		return
	}
	c := &cfg.Etcd
	for _, k := range cfgSortedKeys(keys) {
		kp := keys[k]
		key := "etcd." + cfgtext.Key(k)
		switch k {
		case "endpoints":
			v := p.value(kp)
			list, isList := v.([]any)
			if !isList || len(list) == 0 {
				p.addf(p.lineOf(kp), "%s: must be a list of client URLs like [\"http://etcd1:2379\"], not %s", key, cfgDescribe(v))
				continue
			}
			var eps []string
			for i, e := range list {
				s, isStr := e.(string)
				msg := ""
				if !isStr {
					msg = "must be a string, not " + cfgDescribe(e)
				} else {
					msg = cfgtext.CheckURL(s)
				}
				if msg != "" {
					p.addf(p.lineOf(kp), "%s[%d]: %s", key, i, msg)
					eps = nil
					break
				}
				eps = append(eps, s)
			}
			c.Endpoints = eps
		case "prefix":
			if s, ok := p.str(kp, key); ok {
				if !strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.ContainsAny(s, "\x00\n") {
					p.addf(p.lineOf(kp), "%s: %s must start with / and not end with / (e.g. \"/cron-gate\")", key, cfgtext.ShortQuote(s))
				} else {
					c.Prefix = s
				}
			}
		case "timeout":
			if s, ok := p.str(kp, key); ok {
				d, err := time.ParseDuration(s)
				if err != nil || d <= 0 {
					p.addf(p.lineOf(kp), "%s: %s is not a positive duration (e.g. \"5s\")", key, cfgtext.ShortQuote(s))
				} else {
					c.Timeout = d
				}
			}
		case "on_coordinator_down":
			if s, ok := p.str(kp, key); ok {
				switch s {
				case "skip":
				case "run":
					c.RunOnDown = true
				default:
					p.addf(p.lineOf(kp), "%s: %s is not \"skip\" (fail closed, the default) or \"run\"", key, cfgtext.ShortQuote(s))
				}
			}
		default:
			p.unknown(kp, []string{"etcd"}, k, cfgEtcdKeys)
		}
	}
	if !c.Set() && len(keys) > 0 {
		if _, has := keys["endpoints"]; !has {
			p.addf(p.lineOf(prim), "etcd: endpoints is missing; name every member, e.g. endpoints = [\"http://etcd1:2379\"]")
		}
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
		nk := fmt.Sprintf("notify[%d]", i)
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
		retriesSet := false
		for _, k := range cfgSortedKeys(keys) {
			// Decode with a scratch parser, whose problems are then
			// reported at this key's line.
			q := &cfgParser{path: p.path, md: p.md, data: p.data}
			kp := keys[k]
			key := nk + "." + cfgtext.Key(k)
			switch k {
			case "type":
				if s, ok := q.str(kp, key); ok {
					if s != gate.NotifyCommand && s != gate.NotifyWebhook {
						q.addf(0, "%s: %s is not a notifier type; use \"command\" or \"webhook\"", key, cfgtext.ShortQuote(s))
					}
					n.Type = s
				}
			case "name":
				if s, ok := q.str(kp, key); ok {
					n.Name = s
				}
			case "argv":
				if argv, ok := q.argv(kp, key, false, `["bark", "-g", "blog"]`); ok {
					n.Argv = argv
				}
			case "url":
				if s, ok := q.str(kp, key); ok {
					if msg := cfgtext.CheckURL(s); msg != "" {
						q.addf(0, "%s: %s", key, msg)
					} else {
						n.URL = s
					}
				}
			case "timeout":
				if d, ok := q.interval(kp, key); ok {
					n.Timeout = d
				}
			case "retries":
				if r, ok := q.integer(kp, key); ok {
					if r < 0 || r > gate.MaxNotifyRetries {
						q.addf(0, "%s: %d is out of range; use 0 to %d", key, r, gate.MaxNotifyRetries)
					} else {
						n.Retries, retriesSet = int(r), true
					}
				}
			default:
				msg := "unknown key " + key
				if s := cfgSuggest(k, cfgNotifyKeys); s != "" {
					msg += "; did you mean " + s + "?"
				} else {
					msg += "; the keys allowed here are " + strings.Join(cfgNotifyKeys, ", ")
				}
				q.addf(0, "%s", msg)
			}
			for _, pr := range q.probs {
				p.addf(lineOf(k), "%s", pr.msg)
			}
		}
		switch n.Type {
		case "":
			p.addf(n.Line, "%s: has no type; add type = \"command\" or type = \"webhook\"", nk)
		case gate.NotifyCommand:
			if _, ok := keys["argv"]; !ok {
				p.addf(n.Line, "%s: a command notifier needs argv = [\"COMMAND\", ...]", nk)
			}
			if _, ok := keys["url"]; ok {
				p.addf(lineOf("url"), "%s.url: is for type = \"webhook\"; a command notifier takes argv", nk)
			}
		case gate.NotifyWebhook:
			if _, ok := keys["url"]; !ok {
				p.addf(n.Line, "%s: a webhook notifier needs url = \"https://...\"", nk)
			}
			if _, ok := keys["argv"]; ok {
				p.addf(lineOf("argv"), "%s.argv: is for type = \"command\"; a webhook notifier takes url", nk)
			}
			if !retriesSet {
				n.Retries = gate.DefaultWebhookRetries
			}
		}
		if n.Timeout == 0 {
			n.Timeout = gate.DefaultNotifyTimeout
		}
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

// argv decodes a command line: a non-empty array of strings (empty allowed
// when emptyOK), no NUL bytes, a non-empty first word.
func (p *cfgParser) argv(prim toml.Primitive, key string, emptyOK bool, example string) ([]string, bool) {
	v := p.value(prim)
	arr, ok := v.([]any)
	if !ok {
		p.addf(p.lineOf(prim), "%s: must be an array of strings like %s, not %s", key, example, cfgDescribe(v))
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			p.addf(p.lineOf(prim), "%s[%d]: must be a string in quotes, not %s", key, i, cfgDescribe(e))
			return nil, false
		}
		out = append(out, s)
	}
	if msg := cfgtext.CheckArgv(out, emptyOK); msg != "" {
		p.addf(p.lineOf(prim), "%s: %s", key, msg)
		return nil, false
	}
	return out, true
}

// cfgDescribe names the TOML type of a decoded value for error messages,
// with the value itself when it is short and scalar.
func cfgDescribe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string (" + cfgtext.ShortQuote(v) + ")"
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

// cfgSuggest returns the known key closest to k, if it is close enough to
// be a typo (suggest.Closest).
func cfgSuggest(k string, known []string) string { return suggest.Closest(k, known) }
