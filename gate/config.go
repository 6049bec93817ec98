//go:build linux

package gate

// The configuration: its types, defaults and invariants (Validate, which
// applies the table of keys in keys.go). The TOML file is decoded by
// package gateconf, which links the TOML library; this package does not,
// so that cron-gate's per-tick binary stays lean.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// DefaultConfigPath is the configuration file read when none is named.
const DefaultConfigPath = "/etc/cron-gate/config.toml"

// ConfigPath is the config a cron-gate given --config flag (or
// $CRON_GATE_CONFIG; "" when neither is set) reads: flag, else
// DefaultConfigPath. missingOK is true for the default alone: a missing
// default file is an empty config, a missing file named explicitly is an
// error.
func ConfigPath(flag string) (path string, missingOK bool) {
	if flag == "" {
		return DefaultConfigPath, true
	}
	return flag, false
}

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
	Path     string // file it came from ("" if none)
	StateDir string // `state_dir`; absolute, or "" when not set (StateDirFor decides then)
	SkipCode int    // `skip_code`, default DefaultSkipCode, 0..255
	History  int    // `history`, records kept per gate before rotation, default DefaultHistory, >= MinHistory
	// ReportSkips is `report_skips`: a skip is said on stderr also when
	// it is not a terminal (cron mails it); by default it is not.
	ReportSkips bool
	Gates       map[string]*GateConfig // `[gates.NAME]`, by NAME
	Check       CheckConfig            // `[check]`: the watchdog's settings (zero values: defaults)
	Serve       ServeConfig            // `[serve]`: the dashboard's settings (zero values: defaults)
	Etcd        EtcdConfig             // `[etcd]`: shared pauses across hosts (shared.go); not set: none
	Notify      []NotifyConfig         // `[[notify]]`: where the watchdog sends alerts, in file order
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
	Chronic        bool          // `chronic`: hold the output; write it out only when the run fails
	PausedLine     int           // line of the `paused` key in the file, 0 if absent (for the editor and messages)

	// The watchdog's per-gate settings (cron-gate check, docs/watchdog.md).
	SystemdTimer     string // `systemd_timer`: a systemd unit (e.g. "x.timer") that must be active; then the crontab is not looked at
	FailureStateFile string // `failure_state_file`: absolute path of the worker's JSON state file
	FailureStateKey  string // `failure_state_key`: its key whose truthy value means the worker reports the failure itself; DefaultFailureStateKey when the file is set
	HealthchecksURL  string // `healthchecks_url`: a healthchecks.io-compatible ping URL (http or https)

	// Blocked and overrunning gates (docs/watchdog.md, skipping and overrun).
	MaxRuntime    time.Duration // `max_runtime`: a run longer than this is overrun; 0: none
	SkippingAfter time.Duration // `skipping_after`: blocked this long is the watchdog's skipping condition; 0: SkippingAfterFor's default
	NoAlertOutput bool          // `alert_output = false`: failure alerts carry no output lines

	// Schedule-aware gates (docs/cron-gate.md, "Once per period").
	OncePer  string        // `once_per`: one of OncePers, or "" (every call may run)
	TimeZone string        // `time_zone`: IANA name of the zone of its periods and of the times shown for it; "": the system's
	Jitter   time.Duration // `jitter`: wait JitterOffset (in [0, jitter)) before starting the command; 0: none
	Command  []string      // `command`: what cron-gate trigger runs; nil: the command of its crontab line
}

// StaleInterval is the interval the watchdog's stale rule uses: the
// gate's interval, else the nominal length of its once_per period (a day
// for "1d"), else 0 (not watched for staleness).
func (g *GateConfig) StaleInterval() time.Duration {
	if g.Interval > 0 {
		return g.Interval
	}
	return NominalLength(g.OncePer)
}

// SkippingAfterFor returns how long the gate may be blocked before the
// watchdog's skipping condition is bad: skipping_after, else the gate's
// interval, else 0 (bad as soon as it is blocked).
func (g *GateConfig) SkippingAfterFor() time.Duration {
	if g.SkippingAfter > 0 {
		return g.SkippingAfter
	}
	return g.Interval
}

// CountsAsSkipping reports whether the gate counts as skipping at now:
// blocked (Skipping's rule) for at least SkippingAfterFor since the first
// skip of the run. The watchdog's skipping condition is bad, and a
// healthchecks ping of a skip is /fail, exactly then (one rule for both).
func (g *GateConfig) CountsAsSkipping(sk *Skipping, now time.Time) bool {
	return sk != nil && sk.Blocked && now.Sub(sk.Since) >= g.SkippingAfterFor()
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
	CronD            []string      // `cron_d`: system crontabs, files or directories; nil: ["/etc/crontab", "/etc/cron.d"]; empty (not nil): none
	SystemctlCommand []string      // `systemctl_command`: nil: ["systemctl"]; "is-active UNIT" is appended
	MetricsFile      string        // `metrics_file`: absolute path; the check writes the Prometheus text there
	CheckInterval    time.Duration // `check_interval`: how often cron runs the check; a condition that began within it before the first check is new, not muted; default 5m
	RemindAfter      time.Duration // `remind_after`: a condition muted by the first check alerts once it has been bad this long since; default 24h
}

// Defaults of the [check] table.
const (
	DefaultStaleFactor = 2.5
	DefaultAlertAfter  = 2
	DefaultResumeGrace = 15 * time.Minute
	// DefaultCheckInterval is the documented crontab line's period,
	// `*/5 * * * * cron-gate check`.
	DefaultCheckInterval = 5 * time.Minute
	DefaultRemindAfter   = 24 * time.Hour
)

// CheckIntervalOr returns check_interval or its default.
func (c CheckConfig) CheckIntervalOr() time.Duration {
	if c.CheckInterval == 0 {
		return DefaultCheckInterval
	}
	return c.CheckInterval
}

// RemindAfterOr returns remind_after or its default.
func (c CheckConfig) RemindAfterOr() time.Duration {
	if c.RemindAfter == 0 {
		return DefaultRemindAfter
	}
	return c.RemindAfter
}

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

// The defaults of crontab_command, cron_d and systemctl_command (what
// Debian's cron reads: the user's crontab, /etc/crontab, /etc/cron.d);
// the accessors return copies.
var (
	defaultCrontabCommand   = []string{"crontab", "-l"}
	defaultCronD            = []string{"/etc/crontab", "/etc/cron.d"}
	defaultSystemctlCommand = []string{"systemctl"}
)

// CrontabCommandOr returns crontab_command or (a copy of) its default; an
// empty result means the crontab is not read.
func (c CheckConfig) CrontabCommandOr() []string {
	if c.CrontabCommand == nil {
		return slices.Clone(defaultCrontabCommand)
	}
	return c.CrontabCommand
}

// CronDOr returns cron_d or (a copy of) its default; an empty result
// means no system crontab is read.
func (c CheckConfig) CronDOr() []string {
	if c.CronD == nil {
		return slices.Clone(defaultCronD)
	}
	return c.CronD
}

// SystemctlCommandOr returns systemctl_command or (a copy of) its default.
func (c CheckConfig) SystemctlCommandOr() []string {
	if c.SystemctlCommand == nil {
		return slices.Clone(defaultSystemctlCommand)
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

// Validate checks the invariants that gateconf.Load and gateconf.Parse
// guarantee (see Config and GateConfig), for a Config built or changed in
// code: every set key passes the checks of the table of keys (keys.go) that
// the decoder applies, as do the rules between keys; gate names pass
// CheckName. Its error is a single line starting with "config ".
func (c *Config) Validate() error {
	if err := c.validateRun(); err != nil {
		return err
	}
	if key, msg, isBad := CheckTable.check(&c.Check); isBad {
		return c.bad(CheckTable.Name, key, msg)
	}
	for i := range c.Notify {
		if key, msg, isBad := NotifyTable.check(&c.Notify[i]); isBad {
			return c.bad("notify["+strconv.Itoa(i)+"]", key, msg)
		}
	}
	if key, msg, isBad := ServeTable.check(&c.Serve); isBad {
		return c.bad(ServeTable.Name, key, msg)
	}
	return nil
}

// validateRun is Validate for what a run reads, and all that a cache entry
// holds: the top level, the gates and [etcd]. The run path (a cache hit)
// calls it instead of Validate, so that a cached run checks only what it
// reads.
func (c *Config) validateRun() error {
	if c == nil {
		return errors.New("config: no configuration (nil); load one with gateconf.Load")
	}
	if key, msg, isBad := TopTable.check(c); isBad {
		return c.bad("", key, msg)
	}
	if c.Gates == nil {
		return fmt.Errorf("%s: Gates is nil; use an empty map", safetext.Where(c.Path, 0))
	}
	names := make([]string, 0, len(c.Gates))
	for name := range c.Gates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g, k := c.Gates[name], safetext.TOMLKey("gates", name)
		switch err := CheckName(name); {
		case err != nil:
			return c.bad(k, "", err.Error())
		case g == nil:
			return c.bad(k, "", "is nil; remove it or give it a GateConfig")
		case g.Name != name:
			return c.bad(k, "", fmt.Sprintf("Name is %q, want %q", g.Name, name))
		}
		if key, msg, isBad := GateTable.check(g); isBad {
			return c.bad(k, key, msg)
		}
	}
	if key, msg, isBad := EtcdTable.check(&c.Etcd); isBad {
		return c.bad(EtcdTable.Name, key, msg)
	}
	return nil
}

// bad is Validate's error about key of table (either may be "").
func (c *Config) bad(table, key, msg string) error {
	if key != "" {
		if table != "" {
			table += "."
		}
		table += key
	}
	return fmt.Errorf("%s: %s: %s", safetext.Where(c.Path, 0), table, msg)
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
