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
	"net/url"
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
	Check    CheckConfig            // `[check]`: the watchdog's settings (zero values: defaults)
	Notify   []NotifyConfig         // `[[notify]]`: where the watchdog sends alerts, in file order
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

	// The watchdog's per-gate settings (cron-gate check, README).
	SystemdTimer     string // `systemd_timer`: a systemd unit (e.g. "x.timer") that must be active; then the crontab is not looked at
	FailureStateFile string // `failure_state_file`: absolute path of the worker's JSON state file
	FailureStateKey  string // `failure_state_key`: its key whose truthy value means the worker reports the failure itself; DefaultFailureStateKey when the file is set
	HealthchecksURL  string // `healthchecks_url`: a healthchecks.io-compatible ping URL (http or https)
}

// DefaultFailureStateKey is `failure_state_key` when only the file is set:
// the translation worker's flag.
const DefaultFailureStateKey = "failure_notice"

// CheckConfig is the `[check]` table, the watchdog's settings. Zero values
// mean "not set": use the methods, which apply the defaults.
type CheckConfig struct {
	StaleFactor      float64       // `stale_factor`: stale after this many intervals without a success; >= 1, default 2.5
	AlertAfter       int           // `alert_after`: consecutive bad checks before an alert; 1..100, default 2
	ResumeGrace      time.Duration // `resume_grace`: after a resume, stale is held for interval + this; default 15m (ResumeGraceSet: 0 is a value)
	ResumeGraceSet   bool          // resume_grace was given (so that "0s" is not the default)
	CrontabCommand   []string      // `crontab_command`: prints the crontab; nil: ["crontab", "-l"]; empty (not nil): do not read a crontab
	CronD            []string      // `cron_d`: absolute paths of directories (every file in them) or files in system crontab format
	SystemctlCommand []string      // `systemctl_command`: nil: ["systemctl"]; "is-active UNIT" is appended
	MetricsFile      string        // `metrics_file`: absolute path; the check writes the Prometheus text there
}

// Defaults of the [check] table.
const (
	DefaultStaleFactor = 2.5
	DefaultAlertAfter  = 2
	DefaultResumeGrace = 15 * time.Minute
)

// StaleFactorOr returns stale_factor or its default.
func (c CheckConfig) StaleFactorOr() float64 {
	if c.StaleFactor == 0 {
		return DefaultStaleFactor
	}
	return c.StaleFactor
}

// AlertAfterOr returns alert_after or its default.
func (c CheckConfig) AlertAfterOr() int {
	if c.AlertAfter == 0 {
		return DefaultAlertAfter
	}
	return c.AlertAfter
}

// ResumeGraceOr returns resume_grace or its default.
func (c CheckConfig) ResumeGraceOr() time.Duration {
	if !c.ResumeGraceSet {
		return DefaultResumeGrace
	}
	return c.ResumeGrace
}

// CrontabCommandOr returns crontab_command or its default; an empty result
// means the crontab is not read.
func (c CheckConfig) CrontabCommandOr() []string {
	if c.CrontabCommand == nil {
		return []string{"crontab", "-l"}
	}
	return c.CrontabCommand
}

// SystemctlCommandOr returns systemctl_command or its default.
func (c CheckConfig) SystemctlCommandOr() []string {
	if c.SystemctlCommand == nil {
		return []string{"systemctl"}
	}
	return c.SystemctlCommand
}

// Notifier types of `[[notify]]`.
const (
	NotifyCommand = "command"
	NotifyWebhook = "webhook"
)

// DefaultNotifyTimeout bounds one attempt of a notifier.
const DefaultNotifyTimeout = 10 * time.Second

// DefaultWebhookRetries is `retries` of a webhook when not set.
const DefaultWebhookRetries = 2

// MaxNotifyRetries is the largest accepted `retries`.
const MaxNotifyRetries = 10

// NotifyConfig is one `[[notify]]` table.
type NotifyConfig struct {
	Type    string        // `type`: NotifyCommand or NotifyWebhook
	Name    string        // `name`: for messages; optional
	Argv    []string      // `argv` (command): the command; title and body are appended, or replace {title} and {body}
	URL     string        // `url` (webhook): http or https
	Timeout time.Duration // `timeout`: of one attempt, > 0; DefaultNotifyTimeout when not set
	Retries int           // `retries`: further attempts after a failure, 0..MaxNotifyRetries (webhook default DefaultWebhookRetries)
	Line    int           // line of the table in the file, 0 if unknown (for messages)
}

// Keys accepted at the top level and in a gate table, in documentation
// order (used in "unknown key" messages).
var (
	cfgTopKeys  = []string{"state_dir", "skip_code", "history", "gates", "check", "notify"}
	cfgGateKeys = []string{"paused", "reason", "interval", "legacy_locks", "legacy_pidfiles",
		"skip_code", "history", "log_output", "log_max_bytes",
		"systemd_timer", "failure_state_file", "failure_state_key", "healthchecks_url"}
	cfgCheckKeys = []string{"stale_factor", "alert_after", "resume_grace", "crontab_command", "cron_d",
		"systemctl_command", "metrics_file"}
	cfgNotifyKeys = []string{"type", "name", "argv", "url", "timeout", "retries"}
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
	p := &cfgParser{path: path, md: &md, data: data}
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
		if msg := cfgCheckUnit(g.SystemdTimer); g.SystemdTimer != "" && msg != "" {
			return bad(k+".systemd_timer", "%s", msg)
		}
		if msg := cfgCheckAbs(g.FailureStateFile); g.FailureStateFile != "" && msg != "" {
			return bad(k+".failure_state_file", "%s", msg)
		}
		if g.FailureStateFile != "" && g.FailureStateKey == "" {
			return bad(k+".failure_state_key", "is empty while failure_state_file is set")
		}
		if g.FailureStateFile == "" && g.FailureStateKey != "" {
			return bad(k+".failure_state_key", "is set without failure_state_file")
		}
		if msg := cfgCheckURL(g.HealthchecksURL); g.HealthchecksURL != "" && msg != "" {
			return bad(k+".healthchecks_url", "%s", msg)
		}
	}
	return c.validateCheck(bad)
}

// validateCheck checks the [check] and [[notify]] settings.
func (c *Config) validateCheck(bad func(key, format string, args ...any) error) error {
	ck := c.Check
	if ck.StaleFactor != 0 && (ck.StaleFactor < 1 || ck.StaleFactor > 1000 || math.IsNaN(ck.StaleFactor)) {
		return bad("check.stale_factor", "%v is out of range; use 1 to 1000", ck.StaleFactor)
	}
	if ck.AlertAfter < 0 || ck.AlertAfter > 100 {
		return bad("check.alert_after", "%d is out of range; use 1 to 100", ck.AlertAfter)
	}
	if ck.ResumeGrace < 0 {
		return bad("check.resume_grace", "%s is negative", ck.ResumeGrace)
	}
	if msg := cfgCheckArgv(ck.CrontabCommand, true); msg != "" {
		return bad("check.crontab_command", "%s", msg)
	}
	if msg := cfgCheckArgv(ck.SystemctlCommand, false); msg != "" {
		return bad("check.systemctl_command", "%s", msg)
	}
	for i, d := range ck.CronD {
		if msg := cfgCheckAbs(d); msg != "" {
			return bad(fmt.Sprintf("check.cron_d[%d]", i), "%s", msg)
		}
	}
	if msg := cfgCheckAbs(ck.MetricsFile); ck.MetricsFile != "" && msg != "" {
		return bad("check.metrics_file", "%s", msg)
	}
	for i, n := range c.Notify {
		k := fmt.Sprintf("notify[%d]", i)
		switch n.Type {
		case NotifyCommand:
			if len(n.Argv) == 0 {
				return bad(k+".argv", "is empty; a command notifier needs its command")
			}
			if msg := cfgCheckArgv(n.Argv, false); msg != "" {
				return bad(k+".argv", "%s", msg)
			}
			if n.URL != "" {
				return bad(k+".url", "is for type = \"webhook\"")
			}
		case NotifyWebhook:
			if msg := cfgCheckURL(n.URL); msg != "" {
				return bad(k+".url", "%s", msg)
			}
			if n.Argv != nil {
				return bad(k+".argv", "is for type = \"command\"")
			}
		default:
			return bad(k+".type", "%q is not a notifier type; use \"command\" or \"webhook\"", n.Type)
		}
		if n.Timeout < 0 {
			return bad(k+".timeout", "%s is negative", n.Timeout)
		}
		if n.Retries < 0 || n.Retries > MaxNotifyRetries {
			return bad(k+".retries", "%d is out of range; use 0 to %d", n.Retries, MaxNotifyRetries)
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
		case "check":
			p.check(cfg, prim)
		case "notify":
			p.notify(cfg, prim)
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
			case "systemd_timer":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgCheckUnit(s); msg != "" {
						p.addf(p.lineOf(kp), "%s: %s", key, msg)
					} else {
						g.SystemdTimer = s
					}
				}
			case "failure_state_file":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgCheckAbs(s); msg != "" {
						p.addf(p.lineOf(kp), "%s: %s", key, msg)
					} else {
						g.FailureStateFile = s
					}
				}
			case "failure_state_key":
				if s, ok := p.str(kp, key); ok {
					if s == "" {
						p.addf(p.lineOf(kp), "%s: is empty; name the key of the worker's state file, e.g. %q", key, DefaultFailureStateKey)
					} else {
						g.FailureStateKey = s
					}
				}
			case "healthchecks_url":
				if s, ok := p.str(kp, key); ok {
					if msg := cfgCheckURL(s); msg != "" {
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
			g.LogMaxBytes = DefaultLogMaxBytes
		}
		switch {
		case g.FailureStateFile != "" && g.FailureStateKey == "":
			g.FailureStateKey = DefaultFailureStateKey
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

// check walks the [check] table.
func (p *cfgParser) check(cfg *Config, prim toml.Primitive) {
	keys, ok := p.table(prim, "check", "[check]")
	if !ok {
		return
	}
	c := &cfg.Check
	for _, k := range cfgSortedKeys(keys) {
		kp := keys[k]
		key := "check." + cfgKey(k)
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
				p.addf(p.lineOf(kp), "%s: %s is not a duration of 0 or more (e.g. \"15m\")", key, cfgShortQuote(s))
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
				if msg := cfgCheckAbs(s); msg != "" {
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

// notify walks the [[notify]] array of tables.
func (p *cfgParser) notify(cfg *Config, prim toml.Primitive) {
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
		n := NotifyConfig{}
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
			key := nk + "." + cfgKey(k)
			switch k {
			case "type":
				if s, ok := q.str(kp, key); ok {
					if s != NotifyCommand && s != NotifyWebhook {
						q.addf(0, "%s: %s is not a notifier type; use \"command\" or \"webhook\"", key, cfgShortQuote(s))
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
					if msg := cfgCheckURL(s); msg != "" {
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
					if r < 0 || r > MaxNotifyRetries {
						q.addf(0, "%s: %d is out of range; use 0 to %d", key, r, MaxNotifyRetries)
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
		case NotifyCommand:
			if _, ok := keys["argv"]; !ok {
				p.addf(n.Line, "%s: a command notifier needs argv = [\"COMMAND\", ...]", nk)
			}
			if _, ok := keys["url"]; ok {
				p.addf(lineOf("url"), "%s.url: is for type = \"webhook\"; a command notifier takes argv", nk)
			}
		case NotifyWebhook:
			if _, ok := keys["url"]; !ok {
				p.addf(n.Line, "%s: a webhook notifier needs url = \"https://...\"", nk)
			}
			if _, ok := keys["argv"]; ok {
				p.addf(lineOf("argv"), "%s.argv: is for type = \"command\"; a webhook notifier takes url", nk)
			}
			if !retriesSet {
				n.Retries = DefaultWebhookRetries
			}
		}
		if n.Timeout == 0 {
			n.Timeout = DefaultNotifyTimeout
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
	if msg := cfgCheckArgv(out, emptyOK); msg != "" {
		p.addf(p.lineOf(prim), "%s: %s", key, msg)
		return nil, false
	}
	return out, true
}

// cfgCheckArgv returns why argv is not an acceptable command line, or "".
// A nil argv is "not set" and acceptable.
func cfgCheckArgv(argv []string, emptyOK bool) string {
	if argv == nil {
		return ""
	}
	if len(argv) == 0 {
		if emptyOK {
			return ""
		}
		return "is empty; give the command and its arguments"
	}
	if argv[0] == "" {
		return "the command (first element) is empty"
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Sprintf("element %d contains a NUL byte", i)
		}
	}
	return ""
}

// cfgCheckURL returns why s is not an acceptable http(s) URL, or "".
func cfgCheckURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "is empty; write a URL like \"https://hc-ping.com/UUID\""
	case err != nil || strings.ContainsAny(s, " \t\r\n\x00"):
		return cfgShortQuote(s) + " is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return cfgShortQuote(s) + " is not an http:// or https:// URL"
	case u.Host == "" || u.Hostname() == "":
		return cfgShortQuote(s) + " has no host"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return cfgShortQuote(s) + " has a #fragment; remove it"
	}
	return ""
}

// cfgCheckUnit returns why s is not an acceptable systemd unit name, or "".
func cfgCheckUnit(s string) string {
	if s == "" {
		return "is empty; name a unit like \"blog-autopush.timer\""
	}
	if len(s) > 256 {
		return cfgShortQuote(s) + " is too long for a unit name"
	}
	if s[0] == '-' {
		return cfgShortQuote(s) + " starts with '-'"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(":_.@-\\", c) >= 0) {
			return cfgShortQuote(s) + " is not a systemd unit name"
		}
	}
	if i := strings.LastIndexByte(s, '.'); i <= 0 || i == len(s)-1 {
		return cfgShortQuote(s) + " has no unit type; write the full name, e.g. \"" + s + ".timer\""
	}
	return ""
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
