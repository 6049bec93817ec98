//go:build linux

package gate

// The config keys themselves: one table per table of the config file
// (TopTable, GateTable, CheckTable, NotifyTable, ServeTable, EtcdTable)
// with the checks only their keys use. What a key is and how the tables
// are read: keys.go.

import (
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/etcdendpoint"
	"github.com/crongate/crongate/internal/safetext"
)

// TopTable is the top level of the config file. Its table-valued keys
// (gates, check, notify, serve, etcd) have no Get or Set: the decoder
// walks them with their own tables (GateTable, CheckTable, NotifyTable,
// ServeTable, EtcdTable).
var TopTable = Table[Config]{
	Keys: []Key[Config]{
		{Spec: Spec{Name: "state_dir", Kind: KindPath, DefaultNote: "`$CRON_GATE_STATE_DIR`, else by user (see State dir)",
			Doc: "the journal and runtime state"},
			Get: func(c *Config) (Value, bool) { return Value{S: c.StateDir}, c.StateDir != "" },
			Set: func(c *Config, v Value) { c.StateDir = v.S }},
		{Spec: Spec{Name: "skip_code", Kind: KindInt, Min: 0, Max: 255, Check: exitStatus, Default: Value{N: DefaultSkipCode},
			Doc: "exit status of a run that does not happen"},
			Get: func(c *Config) (Value, bool) { return Value{N: int64(c.SkipCode)}, true },
			Set: func(c *Config, v Value) { c.SkipCode = int(v.N) }},
		{Spec: Spec{Name: "history", Kind: KindInt, Min: MinHistory, Max: MaxHistory, Check: records, Default: Value{N: DefaultHistory},
			Doc: "records kept per gate (between N and 2N)"},
			Get: func(c *Config) (Value, bool) { return Value{N: int64(c.History)}, true },
			Set: func(c *Config, v Value) { c.History = int(v.N) }},
		{Spec: Spec{Name: "report_skips", Kind: KindBool,
			Doc: "say why a run was skipped (paused, a legacy lock, the coordinator down) on stderr also when it is not a terminal: under cron, which mails it; by default only a person at a terminal sees it (`-v` for one line)"},
			Get: func(c *Config) (Value, bool) { return Value{B: c.ReportSkips}, c.ReportSkips },
			Set: func(c *Config, v Value) { c.ReportSkips = v.B }},
		{Spec: Spec{Name: "gates", Kind: KindNamedTables, Doc: "the gates, one `[gates.NAME]` table each"}},
		{Spec: Spec{Name: "check", Kind: KindTable, Doc: "the watchdog, `cron-gate check`"}},
		{Spec: Spec{Name: "notify", Kind: KindTables, Doc: "where the watchdog sends alerts"}},
		{Spec: Spec{Name: "serve", Kind: KindTable, Doc: "the dashboard, `cron-gate serve`"}},
		{Spec: Spec{Name: "etcd", Kind: KindTable, Doc: "pauses shared by every host"}},
	},
}

// GateTable is a `[gates.NAME]` table.
var GateTable = Table[GateConfig]{
	Name: "gates.NAME",
	Keys: []Key[GateConfig]{
		{Spec: Spec{Name: "paused", Kind: KindBool, Doc: "the gate does not run its command; only `cron-gate resume` or an edit lifts it"},
			Get: func(g *GateConfig) (Value, bool) { return Value{B: g.Paused}, g.Paused },
			Set: func(g *GateConfig, v Value) { g.Paused = v.B }}, // the decoder sets PausedLine
		{Spec: Spec{Name: "reason", Kind: KindString, Check: reasonCheck, Doc: "why it is paused, for people (one line)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.Reason}, g.Reason != "" },
			Set: func(g *GateConfig, v Value) { g.Reason = v.S }},
		{Spec: Spec{Name: "interval", Kind: KindDuration, Min: 1, Check: duration, Example: `"30m"`,
			Doc: "expected cadence, for the watchdog's stale condition"},
			Get: func(g *GateConfig) (Value, bool) { return Value{D: g.Interval}, g.Interval != 0 },
			Set: func(g *GateConfig, v Value) { g.Interval = v.D }},
		{Spec: Spec{Name: "once_per", Kind: KindEnum, Values: OncePers, Check: enum,
			Doc: "run at most once per period with success (catch-up after downtime); a skip says `done`"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.OncePer}, g.OncePer != "" },
			Set: func(g *GateConfig, v Value) { g.OncePer = v.S }},
		{Spec: Spec{Name: "time_zone", Kind: KindString, Check: zoneCheck, Example: `"Asia/Seoul"`,
			DefaultNote: "the system's zone", Doc: "IANA zone of the gate's `once_per` periods and of the times `why` shows for it"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.TimeZone}, g.TimeZone != "" },
			Set: func(g *GateConfig, v Value) { g.TimeZone = v.S }},
		{Spec: Spec{Name: "jitter", Kind: KindDuration, Min: 1, Max: float64(MaxJitter), Check: duration, Example: `"5m"`,
			Doc: "wait a stable offset in [0, jitter) from the gate's and host's names before starting the command; a longer wait is a schedule, for the crontab's time fields"},
			Get: func(g *GateConfig) (Value, bool) { return Value{D: g.Jitter}, g.Jitter != 0 },
			Set: func(g *GateConfig, v Value) { g.Jitter = v.D }},
		{Spec: Spec{Name: "command", Kind: KindArgv, Example: `["python3", "/srv/blog/nightly.py"]`,
			DefaultNote: "the command of the gate's crontab line",
			Doc:         "what `cron-gate trigger` and the dashboard's \"run now\" run"},
			Get: func(g *GateConfig) (Value, bool) { return Value{L: g.Command}, g.Command != nil },
			Set: func(g *GateConfig, v Value) { g.Command = v.L }},
		{Spec: Spec{Name: "legacy_locks", Kind: KindPaths, Example: `["/run/NAME.lock"]`,
			Doc: "skip while another process holds a flock on one of these files"},
			Get: func(g *GateConfig) (Value, bool) { return Value{L: g.LegacyLocks}, g.LegacyLocks != nil },
			Set: func(g *GateConfig, v Value) { g.LegacyLocks = v.L }},
		{Spec: Spec{Name: "legacy_pidfiles", Kind: KindPaths, Example: `["/run/NAME.pid"]`,
			Doc: "skip while the PID in one of these files is alive"},
			Get: func(g *GateConfig) (Value, bool) { return Value{L: g.LegacyPidfiles}, g.LegacyPidfiles != nil },
			Set: func(g *GateConfig, v Value) { g.LegacyPidfiles = v.L }},
		{Spec: Spec{Name: "skip_code", Kind: KindInt, Min: 0, Max: 255, Check: exitStatus, DefaultNote: "the global `skip_code`",
			Doc: "this gate's exit status of a run that does not happen"},
			Get: func(g *GateConfig) (Value, bool) {
				if g.SkipCode == nil {
					return Value{}, false
				}
				return Value{N: int64(*g.SkipCode)}, true
			},
			Set: func(g *GateConfig, v Value) { n := int(v.N); g.SkipCode = &n }},
		{Spec: Spec{Name: "history", Kind: KindInt, Min: MinHistory, Max: MaxHistory, Check: records, DefaultNote: "the global `history`",
			Doc: "this gate's records kept"},
			Get: func(g *GateConfig) (Value, bool) { return Value{N: int64(g.History)}, g.History != 0 },
			Set: func(g *GateConfig, v Value) { g.History = int(v.N) }},
		{Spec: Spec{Name: "log_output", Kind: KindBool, Doc: "keep the command's output (`status NAME --output`, the dashboard)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{B: g.LogOutput}, g.LogOutput },
			Set: func(g *GateConfig, v Value) { g.LogOutput = v.B }},
		{Spec: Spec{Name: "log_max_bytes", Kind: KindInt, Min: MinLogMaxBytes, Max: MaxLogMaxBytes, Check: byteCount,
			Default: Value{N: DefaultLogMaxBytes}, DefaultNote: "with `log_output`",
			Doc: "bytes of output kept per run (the last part)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{N: g.LogMaxBytes}, g.LogMaxBytes != 0 },
			Set: func(g *GateConfig, v Value) { g.LogMaxBytes = v.N }},
		{Spec: Spec{Name: "chronic", Kind: KindBool, Doc: "hold the command's output and write it out only when the run fails, then one line saying how it ended (cron mails every failure once, never a success)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{B: g.Chronic}, g.Chronic },
			Set: func(g *GateConfig, v Value) { g.Chronic = v.B }},
		{Spec: Spec{Name: "systemd_timer", Kind: KindUnit, Example: `"blog-autopush.timer"`,
			Doc: "a systemd unit that must be active (the watchdog's unscheduled condition); then the crontab is not looked at"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.SystemdTimer}, g.SystemdTimer != "" },
			Set: func(g *GateConfig, v Value) { g.SystemdTimer = v.S }},
		{Spec: Spec{Name: "failure_state_file", Kind: KindPath,
			Doc: "the worker's JSON state file, for the watchdog's failed condition"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.FailureStateFile}, g.FailureStateFile != "" },
			Set: func(g *GateConfig, v Value) { g.FailureStateFile = v.S }},
		{Spec: Spec{Name: "failure_state_key", Kind: KindString, Check: failureKeyCheck,
			Default: Value{S: DefaultFailureStateKey}, DefaultNote: "with `failure_state_file`",
			Doc: "the key of that file whose truthy value means the worker reports the failure itself"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.FailureStateKey}, g.FailureStateKey != "" },
			Set: func(g *GateConfig, v Value) { g.FailureStateKey = v.S }},
		{Spec: Spec{Name: "healthchecks_url", Kind: KindURL, Example: `"https://hc-ping.com/UUID"`,
			Doc: "a healthchecks.io-compatible ping URL, pinged by each run: `/start`, then success (a busy skip too), `/N` or `/fail`, with a run ID"},
			Get: func(g *GateConfig) (Value, bool) { return Value{S: g.HealthchecksURL}, g.HealthchecksURL != "" },
			Set: func(g *GateConfig, v Value) { g.HealthchecksURL = v.S }},
		{Spec: Spec{Name: "max_runtime", Kind: KindDuration, Min: 1, Check: duration, Example: `"2h"`,
			Doc: "a run longer than this is overrun (status, the dashboard, the watchdog's overrun condition)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{D: g.MaxRuntime}, g.MaxRuntime != 0 },
			Set: func(g *GateConfig, v Value) { g.MaxRuntime = v.D }},
		{Spec: Spec{Name: "skipping_after", Kind: KindDuration, Min: 1, Check: duration, Example: `"1h"`,
			DefaultNote: "the gate's `interval`; without one, as soon as it is blocked",
			Doc:         "blocked this long is the watchdog's skipping condition"},
			Get: func(g *GateConfig) (Value, bool) { return Value{D: g.SkippingAfter}, g.SkippingAfter != 0 },
			Set: func(g *GateConfig, v Value) { g.SkippingAfter = v.D }},
		{Spec: Spec{Name: "alert_output", Kind: KindBool, Default: Value{B: true},
			Doc: "failure alerts carry the last lines of the run's output (with `log_output`)"},
			Get: func(g *GateConfig) (Value, bool) { return Value{B: !g.NoAlertOutput}, g.NoAlertOutput },
			Set: func(g *GateConfig, v Value) { g.NoAlertOutput = !v.B }},
	},
	Defaults: func(g *GateConfig, _ Given) {
		if g.LogOutput && g.LogMaxBytes == 0 {
			g.LogMaxBytes = DefaultLogMaxBytes
		}
		if g.FailureStateFile != "" && g.FailureStateKey == "" {
			g.FailureStateKey = DefaultFailureStateKey
		}
	},
	Rule: func(g *GateConfig, _ Given) []Problem {
		var out []Problem
		if g.LogOutput && g.LogMaxBytes == 0 {
			out = append(out, Problem{"log_max_bytes", "is 0 while log_output is true; use at least " + strconv.Itoa(MinLogMaxBytes)})
		}
		switch {
		case g.FailureStateFile != "" && g.FailureStateKey == "":
			out = append(out, Problem{"failure_state_key", "is empty while failure_state_file is set"})
		case g.FailureStateFile == "" && g.FailureStateKey != "":
			out = append(out, Problem{"failure_state_key", "is set without failure_state_file; name the worker's JSON state file too"})
		}
		if g.PausedLine < 0 {
			out = append(out, Problem{"paused", "PausedLine " + strconv.Itoa(g.PausedLine) + " is negative"})
		}
		return out
	},
}

func reasonCheck(_ *Spec, v Value) string {
	if err := CheckReason(v.S); err != nil {
		return err.Error()
	}
	return ""
}

func failureKeyCheck(_ *Spec, v Value) string {
	if v.S == "" {
		return "is empty; name the key of the worker's state file, e.g. " + strconv.Quote(DefaultFailureStateKey)
	}
	return ""
}

// CheckTable is the `[check]` table.
var CheckTable = Table[CheckConfig]{
	Name: "check",
	Keys: []Key[CheckConfig]{
		{Spec: Spec{Name: "stale_factor", Kind: KindNumber, Min: 1, Max: 1000, Check: inRangeSays, Example: "2.5",
			Default: Value{F: DefaultStaleFactor}, Doc: "stale after this many intervals without a success"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{F: c.StaleFactor}, c.StaleFactor != 0 },
			Set: func(c *CheckConfig, v Value) { c.StaleFactor = v.F }},
		{Spec: Spec{Name: "alert_after", Kind: KindInt, Min: 1, Max: 100, Check: inRangeSays,
			Default: Value{N: DefaultAlertAfter}, Doc: "consecutive bad checks before an alert"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{N: int64(c.AlertAfter)}, c.AlertAfter != 0 },
			Set: func(c *CheckConfig, v Value) { c.AlertAfter = int(v.N) }},
		{Spec: Spec{Name: "resume_grace", Kind: KindDuration, Min: 0, Check: duration, Example: `"15m"`,
			Default: Value{D: DefaultResumeGrace}, Doc: "after a resume, stale is held for interval + this"},
			Get: func(c *CheckConfig) (Value, bool) {
				return Value{D: c.ResumeGrace}, c.ResumeGraceSet || c.ResumeGrace != 0
			},
			Set: func(c *CheckConfig, v Value) { c.ResumeGrace, c.ResumeGraceSet = v.D, true }},
		{Spec: Spec{Name: "crontab_command", Kind: KindArgv, EmptyOK: true, Example: `["crontab", "-l"]`,
			Default: Value{L: defaultCrontabCommand}, Doc: "prints the user's crontab; `[]`: read none"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{L: c.CrontabCommand}, c.CrontabCommand != nil },
			Set: func(c *CheckConfig, v Value) { c.CrontabCommand = v.L }},
		{Spec: Spec{Name: "cron_d", Kind: KindPaths, Example: `["/etc/cron.d"]`, Default: Value{L: defaultCronD},
			Doc: "system crontabs (with a user field): files, and directories whose files cron reads; `[]`: read none"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{L: c.CronD}, c.CronD != nil },
			Set: func(c *CheckConfig, v Value) { c.CronD = v.L }},
		{Spec: Spec{Name: "systemctl_command", Kind: KindArgv, Example: `["systemctl"]`,
			Default: Value{L: defaultSystemctlCommand}, Doc: "`is-active UNIT` is appended; `[\"systemctl\", \"--user\"]` for user timers"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{L: c.SystemctlCommand}, c.SystemctlCommand != nil },
			Set: func(c *CheckConfig, v Value) { c.SystemctlCommand = v.L }},
		{Spec: Spec{Name: "metrics_file", Kind: KindPath, Doc: "each check writes the Prometheus text there"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{S: c.MetricsFile}, c.MetricsFile != "" },
			Set: func(c *CheckConfig, v Value) { c.MetricsFile = v.S }},
		{Spec: Spec{Name: "check_interval", Kind: KindDuration, Min: 1, Check: duration, Example: `"5m"`,
			Default: Value{D: DefaultCheckInterval}, Doc: "how often cron runs the check; what went bad within it before the first check alerts as new"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{D: c.CheckInterval}, c.CheckInterval != 0 },
			Set: func(c *CheckConfig, v Value) { c.CheckInterval = v.D }},
		{Spec: Spec{Name: "remind_after", Kind: KindDuration, Min: 1, Check: duration, Example: `"24h"`,
			Default: Value{D: DefaultRemindAfter}, Doc: "a condition muted by the first check (known at install) alerts once it has been bad this long"},
			Get: func(c *CheckConfig) (Value, bool) { return Value{D: c.RemindAfter}, c.RemindAfter != 0 },
			Set: func(c *CheckConfig, v Value) { c.RemindAfter = v.D }},
	},
}

// NotifyTable is one `[[notify]]` table.
var NotifyTable = Table[NotifyConfig]{
	Name: "notify[i]",
	Keys: []Key[NotifyConfig]{
		{Spec: Spec{Name: "type", Kind: KindEnum, Values: []string{NotifyCommand, NotifyWebhook}, Check: notifyTypeCheck,
			Doc: "how alerts are sent"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{S: n.Type}, n.Type != "" },
			Set: func(n *NotifyConfig, v Value) { n.Type = v.S }},
		{Spec: Spec{Name: "name", Kind: KindString, Doc: "for messages"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{S: n.Name}, n.Name != "" },
			Set: func(n *NotifyConfig, v Value) { n.Name = v.S }},
		{Spec: Spec{Name: "argv", Kind: KindArgv, Example: `["bark", "-g", "blog"]`,
			Doc: "`command`: the command; title and body are appended, or replace `{title}` and `{body}`"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{L: n.Argv}, n.Argv != nil },
			Set: func(n *NotifyConfig, v Value) { n.Argv = v.L }},
		{Spec: Spec{Name: "url", Kind: KindURL, Example: `"https://hooks.example.com/cron-gate"`, Doc: "`webhook`: where the JSON is posted"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{S: n.URL}, n.URL != "" },
			Set: func(n *NotifyConfig, v Value) { n.URL = v.S }},
		{Spec: Spec{Name: "timeout", Kind: KindDuration, Min: 1, Check: duration, Example: `"30m"`,
			Default: Value{D: DefaultNotifyTimeout}, Doc: "of one attempt"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{D: n.Timeout}, n.Timeout != 0 },
			Set: func(n *NotifyConfig, v Value) { n.Timeout = v.D }},
		{Spec: Spec{Name: "retries", Kind: KindInt, Min: 0, Max: MaxNotifyRetries, Check: inRange,
			Default: Value{N: DefaultWebhookRetries}, DefaultNote: "for `webhook`, 0 for `command`",
			Doc: "further attempts after a failure"},
			Get: func(n *NotifyConfig) (Value, bool) { return Value{N: int64(n.Retries)}, n.Retries != 0 },
			Set: func(n *NotifyConfig, v Value) { n.Retries = int(v.N) }},
	},
	Defaults: func(n *NotifyConfig, g Given) {
		if n.Type == NotifyWebhook && !g.Has("retries") {
			n.Retries = DefaultWebhookRetries
		}
		if n.Timeout == 0 {
			n.Timeout = DefaultNotifyTimeout
		}
	},
	Rule: func(n *NotifyConfig, g Given) []Problem {
		var out []Problem
		switch {
		case !g.Has("type"):
			out = append(out, Problem{"", `has no type; add type = "command" or type = "webhook"`})
		case n.Type == NotifyCommand:
			if !g.Has("argv") {
				out = append(out, Problem{"", `a command notifier needs argv = ["COMMAND", ...]`})
			}
			if g.Has("url") {
				out = append(out, Problem{"url", `is for type = "webhook"; a command notifier takes argv`})
			}
		case n.Type == NotifyWebhook:
			if !g.Has("url") {
				out = append(out, Problem{"", `a webhook notifier needs url = "https://..."`})
			}
			if g.Has("argv") {
				out = append(out, Problem{"argv", `is for type = "command"; a webhook notifier takes url`})
			}
		}
		return out
	},
}

func notifyTypeCheck(s *Spec, v Value) string {
	if !oneOf(v.S, s.Values) {
		return safetext.Quote(v.S) + " is not a notifier type; use " + eitherOr(s.Values)
	}
	return ""
}

// ServeTable is the `[serve]` table.
var ServeTable = Table[ServeConfig]{
	Name: "serve",
	Keys: []Key[ServeConfig]{
		{Spec: Spec{Name: "listen", Kind: KindString, Check: listenCheck, Example: `"` + DefaultServeListen + `"`,
			Default: Value{S: DefaultServeListen}, Doc: "host:port; not loopback: a token is required"},
			Get: func(c *ServeConfig) (Value, bool) { return Value{S: c.Listen}, c.Listen != "" },
			Set: func(c *ServeConfig, v Value) { c.Listen = v.S }},
		{Spec: Spec{Name: "time_zone", Kind: KindString, Check: zoneCheck, Example: `"Asia/Seoul"`,
			DefaultNote: "`$TZ`, else local time", Doc: "IANA zone of the times shown"},
			Get: func(c *ServeConfig) (Value, bool) { return Value{S: c.TimeZone}, c.TimeZone != "" },
			Set: func(c *ServeConfig, v Value) { c.TimeZone = v.S }},
		{Spec: Spec{Name: "token_file", Kind: KindPath, Doc: "holds the auth token; mode 0600 or stricter"},
			Get: func(c *ServeConfig) (Value, bool) { return Value{S: c.TokenFile}, c.TokenFile != "" },
			Set: func(c *ServeConfig, v Value) { c.TokenFile = v.S }},
	},
}

// DefaultServeListen is `listen` of [serve] when not set: loopback only.
const DefaultServeListen = "127.0.0.1:8371"

func listenCheck(s *Spec, v Value) string {
	if port, ok := splitPort(v.S); !ok || port == "" {
		return safetext.Quote(v.S) + " is not host:port (e.g. " + s.Example + ")"
	}
	return ""
}

func zoneCheck(s *Spec, v Value) string {
	if _, err := time.LoadLocation(v.S); err != nil || v.S == "" {
		return safetext.Quote(v.S) + " is not a time zone name (e.g. " + s.Example + `, "UTC")`
	}
	return ""
}

// splitPort returns the port of host:port as net.SplitHostPort splits it,
// and whether it does (TestSplitPort holds the two together). This package
// does not link net, so that cron-gate's per-tick binary stays lean.
func splitPort(hostport string) (port string, ok bool) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", false
	}
	j, k := 0, 0
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		if end < 0 || end+1 != i {
			return "", false
		}
		j, k = 1, end+1
	} else if strings.IndexByte(hostport[:i], ':') >= 0 {
		return "", false
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 || strings.IndexByte(hostport[k:], ']') >= 0 {
		return "", false
	}
	return hostport[i+1:], true
}

// EtcdTable is the `[etcd]` table.
var EtcdTable = Table[EtcdConfig]{
	Name: "etcd",
	Keys: []Key[EtcdConfig]{
		{Spec: Spec{Name: "endpoints", Kind: KindURLs, Example: `["http://etcd1:2379"]`, Doc: "every member's client endpoint, in etcdctl's forms: `http://HOST:PORT`, `https://HOST:PORT`, `HOST:PORT`, `unix:///PATH`"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{L: e.Endpoints}, len(e.Endpoints) > 0 },
			Set: func(e *EtcdConfig, v Value) { e.Endpoints = v.L }},
		{Spec: Spec{Name: "prefix", Kind: KindString, Check: prefixCheck, Example: `"` + DefaultEtcdPrefix + `"`,
			Default: Value{S: DefaultEtcdPrefix}, Doc: "key prefix; one per independent set of hosts"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.Prefix}, e.Prefix != "" },
			Set: func(e *EtcdConfig, v Value) { e.Prefix = v.S }},
		{Spec: Spec{Name: "timeout", Kind: KindDuration, Min: 1, Check: duration, Example: `"5s"`,
			Default: Value{D: DefaultEtcdTimeout}, Doc: "per call, retries included"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{D: e.Timeout}, e.Timeout != 0 },
			Set: func(e *EtcdConfig, v Value) { e.Timeout = v.D }},
		{Spec: Spec{Name: "on_coordinator_down", Kind: KindEnum, Values: []string{"skip", "run"}, Check: enum,
			Default: Value{S: "skip"}, Doc: "when etcd cannot be reached: skip the run (fail closed) or run it"},
			Get: func(e *EtcdConfig) (Value, bool) {
				if e.RunOnDown {
					return Value{S: "run"}, true
				}
				return Value{}, false
			},
			Set: func(e *EtcdConfig, v Value) { e.RunOnDown = v.S == "run" }},
		{Spec: Spec{Name: "ca_file", Kind: KindPath, Example: `"/etc/etcd/ca.pem"`, DefaultNote: "the system's roots",
			Doc: "PEM certificates that sign the members' certificates (`https://`, `unixs://` or `HOST:PORT` endpoints)"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.CAFile}, e.CAFile != "" },
			Set: func(e *EtcdConfig, v Value) { e.CAFile = v.S }},
		{Spec: Spec{Name: "cert_file", Kind: KindPath, Example: `"/etc/etcd/client.pem"`,
			Doc: "client certificate (PEM), for members that require one; with `key_file`"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.CertFile}, e.CertFile != "" },
			Set: func(e *EtcdConfig, v Value) { e.CertFile = v.S }},
		{Spec: Spec{Name: "key_file", Kind: KindPath, Example: `"/etc/etcd/client-key.pem"`,
			Doc: "the client certificate's key (PEM)"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.KeyFile}, e.KeyFile != "" },
			Set: func(e *EtcdConfig, v Value) { e.KeyFile = v.S }},
		{Spec: Spec{Name: "server_name", Kind: KindString, Example: `"etcd.internal"`, DefaultNote: "each endpoint's host",
			Doc: "the name the members' certificates carry"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.ServerName}, e.ServerName != "" },
			Set: func(e *EtcdConfig, v Value) { e.ServerName = v.S }},
		{Spec: Spec{Name: "user", Kind: KindString, Check: etcdUserCheck, Example: `"cron-gate"`,
			Doc: "etcd auth user; the password is in `password_file` or `$CRON_GATE_ETCD_PASSWORD`"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.User}, e.User != "" },
			Set: func(e *EtcdConfig, v Value) { e.User = v.S }},
		{Spec: Spec{Name: "password_file", Kind: KindPath, Example: `"/etc/cron-gate/etcd-password"`,
			Doc: "holds `user`'s password (first line); mode 0600 or stricter"},
			Get: func(e *EtcdConfig) (Value, bool) { return Value{S: e.PasswordFile}, e.PasswordFile != "" },
			Set: func(e *EtcdConfig, v Value) { e.PasswordFile = v.S }},
	},
	Rule: func(e *EtcdConfig, g Given) []Problem {
		switch {
		case !g.Has("endpoints") && g.Any():
			return []Problem{{"", `endpoints is missing; name every member, e.g. endpoints = ["http://etcd1:2379"]`}}
		case g.Has("password_file") && !g.Has("user"):
			return []Problem{{"password_file", "needs user"}}
		case g.Has("cert_file") != g.Has("key_file"):
			return []Problem{{"cert_file", "cert_file and key_file go together"}}
		}
		if e.CAFile != "" || e.CertFile != "" || e.KeyFile != "" || e.ServerName != "" {
			for _, ep := range e.Endpoints {
				sc, _ := etcdendpoint.Scheme(ep)
				if err := etcdendpoint.CheckTLS(ep, sc, "ca_file, cert_file, key_file and server_name"); err != nil {
					return []Problem{{"endpoints", err.Error()}}
				}
			}
		}
		return nil
	},
}

// etcdUserCheck refuses a user name etcd cannot have.
func etcdUserCheck(s *Spec, v Value) string {
	if v.S == "" || strings.ContainsAny(v.S, ":\x00\n") {
		return safetext.Quote(v.S) + " is not an etcd user name (no colon, e.g. " + s.Example + ")"
	}
	return ""
}

// DefaultEtcdPrefix is `prefix` of [etcd] when not set.
const DefaultEtcdPrefix = "/cron-gate"

func prefixCheck(s *Spec, v Value) string {
	if err := etcdendpoint.CheckPrefix(v.S); err != nil {
		return err.Error() + " (e.g. " + s.Example + ")"
	}
	return ""
}
