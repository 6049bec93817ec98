package gate

// The configuration: its types, defaults and invariants (Validate). The
// TOML file is decoded by package gateconf, which links the TOML library;
// this package does not, so that cron-gate's per-tick binary stays lean.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/crongate/crongate/internal/cfgtext"
	"github.com/crongate/crongate/runner"
)

// DefaultConfigPath is the configuration file read when none is named.
const DefaultConfigPath = "/etc/cron-gate/config.toml"

// DefaultStateDir is the state directory for root when neither the config
// nor $CRON_GATE_STATE_DIR sets one (StateDirFor has the whole rule).
const DefaultStateDir = "/var/lib/cron-gate"

// DefaultSkipCode is the exit status cron-gate uses, unless configured
// otherwise, when it decides not to run a command (75 is EX_TEMPFAIL).
const DefaultSkipCode = runner.ExitSkip

// MinHistory is the smallest accepted `history`, global or per gate.
const MinHistory = 10

// MaxHistory is the largest accepted `history`, global or per gate; it keeps
// the value meaningful and representable as an int on every platform.
const MaxHistory = 100_000_000

// MinLogMaxBytes is the smallest accepted `log_max_bytes`.
const MinLogMaxBytes = 4096

// MaxConfigBytes is the largest config file ReadConfig accepts. A real config is a
// few kilobytes; anything this large is the wrong file.
const MaxConfigBytes = 4 << 20

// Config is cron-gate's configuration, as read from a TOML file.
//
// A Config returned by gateconf.Load, gateconf.Parse or DefaultConfig satisfies Validate:
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
	Serve    ServeConfig            // `[serve]`: the dashboard's settings (zero values: defaults)
	Etcd     EtcdConfig             // `[etcd]`: shared pauses across hosts (shared.go); not set: none

	// Shared is not read from the file: cron-gate-etcd sets it to the
	// [etcd] store, and pauses are then shared by every host (shared.go).
	Shared SharedPauses
	Notify []NotifyConfig // `[[notify]]`: where the watchdog sends alerts, in file order
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

// ServeConfig is the `[serve]` table: `cron-gate serve`, the dashboard.
type ServeConfig struct {
	Listen    string // `listen`: host:port; "" is the default (loopback)
	TimeZone  string // `time_zone`: IANA name for the times shown, e.g. "Asia/Seoul"; "" is $TZ, else local
	TokenFile string // `token_file`: absolute path of a file holding the auth token (read by serve)
}

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

// Validate checks the invariants that gateconf.Load and gateconf.Parse guarantee (see Config
// and GateConfig), for a Config built or changed in code. Its error is a
// single line starting with "config ".
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("config: no configuration (nil); load one with gateconf.Load")
	}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", cfgtext.Where(c.Path, 0), key, fmt.Sprintf(format, args...))
	}
	if msg := cfgtext.CheckAbs(c.StateDir); c.StateDir != "" && msg != "" {
		return bad("state_dir", "%s", msg)
	}
	if c.SkipCode < 0 || c.SkipCode > 255 {
		return bad("skip_code", "%d is out of range; use 0 to 255", c.SkipCode)
	}
	if c.History < MinHistory || c.History > MaxHistory {
		return bad("history", "%d is out of range; use %d to %d", c.History, MinHistory, MaxHistory)
	}
	if c.Gates == nil {
		return fmt.Errorf("%s: Gates is nil; use an empty map", cfgtext.Where(c.Path, 0))
	}
	names := make([]string, 0, len(c.Gates))
	for name := range c.Gates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := c.Gates[name]
		k := cfgtext.Key("gates", name)
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
			if msg := cfgtext.CheckAbs(l); msg != "" {
				return bad(fmt.Sprintf("%s.legacy_locks[%d]", k, i), "%s", msg)
			}
		}
		for i, l := range g.LegacyPidfiles {
			if msg := cfgtext.CheckAbs(l); msg != "" {
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
		if err := CheckReason(g.Reason); err != nil {
			return bad(k+".reason", "%s", err)
		}
		if g.PausedLine < 0 {
			return bad(k+".paused", "PausedLine %d is negative", g.PausedLine)
		}
		if msg := cfgtext.CheckUnit(g.SystemdTimer); g.SystemdTimer != "" && msg != "" {
			return bad(k+".systemd_timer", "%s", msg)
		}
		if msg := cfgtext.CheckAbs(g.FailureStateFile); g.FailureStateFile != "" && msg != "" {
			return bad(k+".failure_state_file", "%s", msg)
		}
		if g.FailureStateFile != "" && g.FailureStateKey == "" {
			return bad(k+".failure_state_key", "is empty while failure_state_file is set")
		}
		if g.FailureStateFile == "" && g.FailureStateKey != "" {
			return bad(k+".failure_state_key", "is set without failure_state_file")
		}
		if msg := cfgtext.CheckURL(g.HealthchecksURL); g.HealthchecksURL != "" && msg != "" {
			return bad(k+".healthchecks_url", "%s", msg)
		}
	}
	for i, e := range c.Etcd.Endpoints {
		if msg := cfgtext.CheckURL(e); msg != "" {
			return bad(fmt.Sprintf("etcd.endpoints[%d]", i), "%s", msg)
		}
	}
	if c.Etcd.Timeout < 0 {
		return bad("etcd.timeout", "%s is negative", c.Etcd.Timeout)
	}
	if msg := cfgtext.CheckAbs(c.Serve.TokenFile); c.Serve.TokenFile != "" && msg != "" {
		return bad("serve.token_file", "%s", msg)
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
	if msg := cfgtext.CheckArgv(ck.CrontabCommand, true); msg != "" {
		return bad("check.crontab_command", "%s", msg)
	}
	if msg := cfgtext.CheckArgv(ck.SystemctlCommand, false); msg != "" {
		return bad("check.systemctl_command", "%s", msg)
	}
	for i, d := range ck.CronD {
		if msg := cfgtext.CheckAbs(d); msg != "" {
			return bad(fmt.Sprintf("check.cron_d[%d]", i), "%s", msg)
		}
	}
	if msg := cfgtext.CheckAbs(ck.MetricsFile); ck.MetricsFile != "" && msg != "" {
		return bad("check.metrics_file", "%s", msg)
	}
	for i, n := range c.Notify {
		k := fmt.Sprintf("notify[%d]", i)
		switch n.Type {
		case NotifyCommand:
			if len(n.Argv) == 0 {
				return bad(k+".argv", "is empty; a command notifier needs its command")
			}
			if msg := cfgtext.CheckArgv(n.Argv, false); msg != "" {
				return bad(k+".argv", "%s", msg)
			}
			if n.URL != "" {
				return bad(k+".url", "is for type = \"webhook\"")
			}
		case NotifyWebhook:
			if msg := cfgtext.CheckURL(n.URL); msg != "" {
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
