package gateconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"

	"github.com/BurntSushi/toml"
)

func TestConfigParseFull(t *testing.T) {
	cfg, err := Load("testdata/config/full.toml", false)
	if err != nil {
		t.Fatal(err)
	}
	want := &gate.Config{
		Path:     "testdata/config/full.toml",
		StateDir: "/srv/cron-gate",
		SkipCode: 0,
		History:  500,
		Gates: map[string]*gate.GateConfig{
			"backup": {
				Name:           "backup",
				Paused:         true,
				Reason:         "storage migration",
				Interval:       20 * time.Hour,
				LegacyLocks:    []string{"/var/run/backup.lock", "/tmp/backup.lock"},
				LegacyPidfiles: []string{"/var/run/backup.pid"},
				LogOutput:      true,
				LogMaxBytes:    gate.DefaultLogMaxBytes,
				PausedLine:     10,
			},
			"report": {
				Name:        "report",
				SkipCode:    new(3),
				History:     20,
				LogOutput:   true,
				LogMaxBytes: 65536,
				PausedLine:  20,
			},
			"db-vacuum.daily": {Name: "db-vacuum.daily", Interval: 90 * time.Minute},
			"noop":            {Name: "noop"},
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
		for k, g := range cfg.Gates {
			t.Errorf("gate %s: %+v", k, *g)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	if got := cfg.SkipCodeFor("report"); got != 3 {
		t.Errorf("SkipCodeFor(report) = %d, want 3", got)
	}
	if got := cfg.SkipCodeFor("backup"); got != 0 {
		t.Errorf("SkipCodeFor(backup) = %d, want 0", got)
	}
	if got := cfg.SkipCodeFor("undeclared"); got != 0 {
		t.Errorf("SkipCodeFor(undeclared) = %d, want 0", got)
	}
	if got := cfg.HistoryFor("report"); got != 20 {
		t.Errorf("HistoryFor(report) = %d, want 20", got)
	}
	if got := cfg.HistoryFor("backup"); got != 500 {
		t.Errorf("HistoryFor(backup) = %d, want 500", got)
	}
	if g := cfg.Gate("backup"); g != cfg.Gates["backup"] {
		t.Errorf("Gate(backup) is not the declared gate")
	}
	if g := cfg.Gate("other"); g == nil || g.Name != "other" || g.Paused || g.SkipCode != nil {
		t.Errorf("Gate(other) = %+v, want a default gate", g)
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "\n\n", "[gates]\n"} {
		cfg, err := Parse("/etc/x.toml", []byte(src))
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		want := gate.DefaultConfig()
		want.Path = "/etc/x.toml"
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("Parse(%q) = %+v, want %+v", src, cfg, want)
		}
	}
	d := gate.DefaultConfig()
	if d.StateDir != "" || d.SkipCode != 75 || d.History != 1000 || d.Gates == nil || d.Path != "" {
		t.Errorf("DefaultConfig() = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}

	var nilCfg *gate.Config
	if g := nilCfg.Gate("x"); g == nil || g.Name != "x" {
		t.Errorf("nil.Gate = %+v", g)
	}
	if nilCfg.SkipCodeFor("x") != 75 || nilCfg.HistoryFor("x") != 1000 {
		t.Errorf("nil config defaults wrong")
	}
	if err := nilCfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "config") {
		t.Errorf("nil.Validate() = %v", err)
	}
}

func TestConfigParseForms(t *testing.T) {
	// The same gate written in the other forms TOML allows.
	for _, src := range []string{
		"gates.x = {paused = true, interval = \"5m\"}\n",
		"[gates]\nx.paused = true\nx.interval = \"5m\"\n",
		"gates.x.paused = true\ngates.x.interval = \"5m\"\n",
		"[gates]\nx = {paused = true, interval = \"5m\"}\n",
		"[gates.x]\n\"paused\" = true\n'interval' = \"5m\"\n",
		"[ gates . \"x\" ]\r\npaused = true\r\ninterval = \"5m\"\r\n",
	} {
		cfg, err := Parse("/etc/x.toml", []byte(src))
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		g := cfg.Gates["x"]
		if g == nil || !g.Paused || g.Interval != 5*time.Minute || g.PausedLine < 1 {
			t.Errorf("Parse(%q): gate x = %+v", src, g)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	const P = "config /etc/x.toml"
	tests := []struct {
		src  string
		want string // the whole error, or a prefix ending in "..."
	}{
		// Syntax errors, from the library's ParseError.
		{"[gates.x\n", P + " line 1: ..."},
		{"a = \n", P + " line 1: ..."},
		{"\n\n[gates.x]\npaused = tru\n", P + " line 4: ..."},
		{"[gates.x]\npaused = true\npaused = false\n", P + " line 3: ..."},
		{"x = \"\xff\"\n", P + " line 1: ..."},

		// Unknown keys at every level.
		{"[gates.foo]\n\n\n\n\n\npausd = true\n", P + " line 7: unknown key gates.foo.pausd; did you mean paused?"},
		{"statedir = \"/x\"\n", P + " line 1: unknown key statedir; did you mean state_dir?"},
		{"\n[logging]\nlevel = 3\n", P + " line 2: unknown key logging; the keys allowed here are state_dir, skip_code, history, report_skips, gates, check, notify, serve, etcd"},
		{"\n[other.table]\nlevel = 3\n", P + " line 2: unknown key other; the keys allowed here are ..."},
		{"[gate.foo]\npaused = true\n", P + " line 1: unknown key gate; gates are declared as [gates.NAME]"},
		{"[gates.foo.env]\nA = 1\n", P + " line 1: unknown key gates.foo.env; the keys allowed here are paused, reason, ..."},
		{"[gates.foo]\nPaused = true\n", P + " line 2: unknown key gates.foo.Paused; did you mean paused?"},
		{"gates.foo = {paused = true, zzz = 1}\n", P + " line 1: unknown key gates.foo.zzz; ..."},

		// Wrong types, with the line and key.
		{"[gates.foo]\npaused = \"yes\"\n", P + ` line 2: gates.foo.paused: must be true or false, not a string ("yes")`},
		{"[gates.foo]\npaused = 1\n", P + ` line 2: gates.foo.paused: must be true or false, not an integer (1)`},
		{"[gates.foo]\nreason = 42\n", P + ` line 2: gates.foo.reason: must be a string in quotes, not an integer (42)`},
		{"state_dir = [\"/x\"]\n", P + ` line 1: state_dir: must be a string in quotes, not an array`},
		{"skip_code = \"75\"\n", P + ` line 1: skip_code: must be an integer, not a string ("75")`},
		{"skip_code = 7.5\n", P + ` line 1: skip_code: must be an integer, not a float (7.5)`},
		{"history = 2020-01-01\n", P + ` line 1: history: must be an integer, not a date/time`},
		{"[gates.foo]\nlog_output = \"true\"\n", P + ` line 2: gates.foo.log_output: must be true or false, not a string ("true")`},
		{"[gates.foo]\nlog_max_bytes = \"1M\"\n", P + ` line 2: gates.foo.log_max_bytes: must be an integer, not a string ("1M")`},
		{"[gates.foo]\nlegacy_locks = \"/run/x.lock\"\n", P + ` line 2: gates.foo.legacy_locks: must be an array of absolute paths like ["/run/NAME.lock"], not a string ("/run/x.lock")`},
		{"[gates.foo]\nlegacy_pidfiles = [1]\n", P + ` line 2: gates.foo.legacy_pidfiles[0]: must be a path in quotes, not an integer (1)`},
		{"gates = 1\n", P + ` line 1: gates: must be a table ([gates.NAME] tables), not an integer (1)`},
		{"[[gates]]\nx = 1\n", P + ` line 1: gates: must be a table ([gates.NAME] tables), not an array of tables`},
		{"[gates]\nfoo = true\n", P + ` line 2: gates.foo: must be a table ([gates.foo]), not a boolean (true)`},
		{"[[gates.foo]]\npaused = true\n", P + ` line 1: gates.foo: must be a table ([gates.foo]), not an array of tables`},

		// Bad values.
		{"[gates.foo]\n\ninterval = \"30x\"\n", P + ` line 3: gates.foo.interval: "30x" is not a duration (e.g. "30m", or 3d for days)`},
		{"[gates.foo]\ninterval = \"\"\n", P + ` line 2: gates.foo.interval: "" is not a duration (e.g. "30m", or 3d for days)`},
		{"[gates.foo]\ninterval = \"-5m\"\n", P + ` line 2: gates.foo.interval: "-5m" is not positive; use a duration like "30m", or remove the key`},
		{"[gates.foo]\ninterval = \"0s\"\n", P + ` line 2: gates.foo.interval: "0s" is not positive; ...`},
		{"[gates.foo]\ninterval = 30\n", P + ` line 2: gates.foo.interval: must be a duration string like "30m", not an integer (30)`},
		{"skip_code = 256\n", P + ` line 1: skip_code: 256 is out of range; use an exit status from 0 to 255`},
		{"skip_code = -1\n", P + ` line 1: skip_code: -1 is out of range; ...`},
		{"[gates.foo]\nskip_code = 1000\n", P + ` line 2: gates.foo.skip_code: 1000 is out of range; ...`},
		{"history = 9\n", P + ` line 1: history: 9 is too small; keep at least 10 records`},
		{"history = 9999999999999\n", P + ` line 1: history: 9999999999999 is too large; ...`},
		{"[gates.foo]\nhistory = 0\n", P + ` line 2: gates.foo.history: 0 is too small; keep at least 10 records`},
		{"[gates.foo]\nlog_max_bytes = 100\n", P + ` line 2: gates.foo.log_max_bytes: 100 is too small; use at least 4096`},
		{"[gates.foo]\nlog_max_bytes = 4294967296\n", P + ` line 2: gates.foo.log_max_bytes: 4294967296 is too large; use at most 1073741824 (the output is held in memory until the run ends)`},
		{"state_dir = \"var/lib/cg\"\n", P + ` line 1: state_dir: "var/lib/cg" is not an absolute path; write the full path starting with /`},
		{"state_dir = \"\"\n", P + ` line 1: state_dir: is empty; write an absolute path starting with /`},
		{"[gates.foo]\nlegacy_locks = [\"/ok\",\n  \"run/x.lock\"]\n", P + ` line 2: gates.foo.legacy_locks[1]: "run/x.lock" is not an absolute path; write the full path starting with /`},
		{"[gates.foo]\nlegacy_pidfiles = [\"/run/a\\u0000b\"]\n", P + ` line 2: gates.foo.legacy_pidfiles[0]: "/run/a\x00b" contains a NUL byte; write a real path`},

		// Gate names.
		{"[gates.pause]\n", P + ` line 1: gates.pause: gate name "pause" is reserved for the pause subcommand; pick another`},
		{"\n[gates.\"a/b\"]\npaused = true\n", P + ` line 2: gates."a/b": gate name "a/b" contains '/'; ...`},
		{"[gates.\"..\"]\n", P + ` line 1: gates."..": gate name ".." starts with '.'; ...`},
		{"[gates.\"\"]\n", P + ` line 1: gates."": gate name is empty; ...`},
		{"[gates.\"a\\nb\"]\n", P + ` line 1: gates."a\nb": gate name "a\nb" contains a control character; ...`},
		{"[gates.-x]\n", P + ` line 1: gates.-x: gate name "-x" starts with '-'; ...`},
		// An implicit table has no position: the first line inside it is used.
		{"# c\n[gates.\"a b\".x]\ny = 1\n", P + ` line 2: gates."a b": gate name "a b" contains " "; ...`},

		// Several problems: the first by line, and a count.
		{"[gates.b]\npaused = 1\n[gates.a]\npaused = 2\nreason = 3\n", P + ` line 2: gates.b.paused: must be true or false, not an integer (1) (and 2 more problems)`},
		{"history = 1\nskip_code = 300\n", P + ` line 1: history: 1 is too small; keep at least 10 records (and 1 more problem)`},
	}
	for _, tt := range tests {
		cfg, err := Parse("/etc/x.toml", []byte(tt.src))
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want error %q", tt.src, cfg, tt.want)
			continue
		}
		got := err.Error()
		if cfg != nil {
			t.Errorf("Parse(%q) returned a config with its error", tt.src)
		}
		if strings.ContainsAny(got, "\n\r") {
			t.Errorf("Parse(%q) error is not one line: %q", tt.src, got)
		}
		if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
			if !strings.HasPrefix(got, prefix) {
				t.Errorf("Parse(%q) error\n got  %s\n want %s", tt.src, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("Parse(%q) error\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

// TestConfigLineProbe pins the two ways lineOf gets a key's line out of the
// TOML library, so that an upgrade that breaks either fails here.
func TestConfigLineProbe(t *testing.T) {
	src := "a = 1\n\n[gates.foo]\n# c\npaused = true\n[gates]\nbar = {paused = true,\n reason = \"x\"}\nbaz.paused = false\n"
	var top map[string]toml.Primitive
	md, err := toml.Decode(src, &top)
	if err != nil {
		t.Fatal(err)
	}
	p := &cfgParser{path: "x", md: &md}
	var gates map[string]toml.Primitive
	if err := md.PrimitiveDecode(top["gates"], &gates); err != nil {
		t.Fatal(err)
	}
	sub := func(name string) map[string]toml.Primitive {
		var m map[string]toml.Primitive
		if err := md.PrimitiveDecode(gates[name], &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		what string
		prim toml.Primitive
		want int
	}{
		{"a", top["a"], 1},
		{"gates", top["gates"], 6},
		{"gates.foo", gates["foo"], 3},
		{"gates.foo.paused", sub("foo")["paused"], 5},
		{"gates.bar", gates["bar"], 7},
		{"gates.bar.paused", sub("bar")["paused"], 7},
		{"gates.bar.reason", sub("bar")["reason"], 8},
		{"gates.baz", gates["baz"], 0}, // implicit
		{"gates.baz.paused", sub("baz")["paused"], 9},
	}
	for _, c := range cases {
		if got := p.lineOf(c.prim); got != c.want {
			t.Errorf("lineOf(%s) = %d, want %d", c.what, got, c.want)
		}
		// The fallback alone must agree.
		var pe toml.ParseError
		got := 0
		if err := md.PrimitiveDecode(c.prim, &cfgLineProbe{}); err != nil {
			if ok := asParseError(err, &pe); ok {
				got = pe.Position.Line
			}
		}
		if got != c.want {
			t.Errorf("fallback probe for %s = %d, want %d", c.what, got, c.want)
		}
	}
	if got := p.lineOfDeep(gates["baz"]); got != 9 {
		t.Errorf("lineOfDeep(gates.baz) = %d, want 9", got)
	}
}

func asParseError(err error, pe *toml.ParseError) bool {
	e, ok := err.(toml.ParseError)
	if ok {
		*pe = e
	}
	return ok
}

func TestConfigLoad(t *testing.T) {
	dir := t.TempDir()

	missing := filepath.Join(dir, "missing.toml")
	cfg, err := Load(missing, true)
	if err != nil || !reflect.DeepEqual(cfg, gate.DefaultConfig()) {
		t.Errorf("Load(missing, true) = %+v, %v; want the default config", cfg, err)
	}
	_, err = Load(missing, false)
	wantErr := "config " + missing + ": file does not exist; check the path or create the file"
	if err == nil || err.Error() != wantErr {
		t.Errorf("Load(missing, false) error = %v, want %q", err, wantErr)
	}

	dangling := filepath.Join(dir, "dangling.toml")
	if err := os.Symlink(filepath.Join(dir, "nowhere.toml"), dangling); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dangling, true)
	if err == nil || !strings.Contains(err.Error(), "which does not exist; fix or remove the symlink") {
		t.Errorf("Load(dangling, true) error = %v", err)
	}

	_, err = Load(dir, true)
	if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("Load(dir) error = %v", err)
	}

	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", gate.MaxConfigBytes/2+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big, false)
	if err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("Load(big) error = %v", err)
	}

	// A symlinked config is read through the link; Path stays as given.
	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("[gates.a]\npaused = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(link, false)
	if err != nil || cfg.Path != link || !cfg.Gate("a").Paused {
		t.Errorf("Load(link) = %+v, %v", cfg, err)
	}

	bad := filepath.Join(dir, "bad config.toml")
	if err := os.WriteFile(bad, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad, false)
	if err == nil || !strings.HasPrefix(err.Error(), `config "`+bad+`" line 1: unknown key x`) {
		t.Errorf("Load(bad) error = %v", err)
	}

	if os.Geteuid() != 0 {
		unreadable := filepath.Join(dir, "unreadable.toml")
		if err := os.WriteFile(unreadable, nil, 0o000); err != nil {
			t.Fatal(err)
		}
		_, err = Load(unreadable, true)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Load(unreadable) error = %v", err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := func() *gate.Config {
		c := gate.DefaultConfig()
		c.Path = "/etc/x.toml"
		c.Gates["a"] = &gate.GateConfig{Name: "a"}
		return c
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mod  func(c *gate.Config)
		want string
	}{
		{func(c *gate.Config) { c.StateDir = "rel" }, "state_dir"},
		{func(c *gate.Config) { c.SkipCode = 256 }, "skip_code"},
		{func(c *gate.Config) { c.History = 9 }, "history"},
		{func(c *gate.Config) { c.Gates = nil }, "Gates is nil"},
		{func(c *gate.Config) { c.Gates["b"] = nil }, "gates.b: is nil"},
		{func(c *gate.Config) { c.Gates["run"] = &gate.GateConfig{Name: "run"} }, "reserved"},
		{func(c *gate.Config) { c.Gates["a"].Name = "b" }, "gates.a: Name"},
		{func(c *gate.Config) { c.Gates["a"].LegacyLocks = []string{"x"} }, "gates.a.legacy_locks[0]"},
		{func(c *gate.Config) { c.Gates["a"].LegacyPidfiles = []string{""} }, "gates.a.legacy_pidfiles[0]"},
		{func(c *gate.Config) { c.Gates["a"].Interval = -1 }, "gates.a.interval"},
		{func(c *gate.Config) { c.Gates["a"].SkipCode = new(-1) }, "gates.a.skip_code"},
		{func(c *gate.Config) { c.Gates["a"].History = 5 }, "gates.a.history"},
		{func(c *gate.Config) { c.Gates["a"].LogMaxBytes = 5 }, "gates.a.log_max_bytes"},
		{func(c *gate.Config) { c.Gates["a"].LogOutput = true }, "gates.a.log_max_bytes"},
		{func(c *gate.Config) { c.Gates["a"].PausedLine = -1 }, "gates.a.paused"},
	}
	for i, tt := range tests {
		c := ok()
		tt.mod(c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "config /etc/x.toml: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("case %d: Validate() = %v, want an error about %s", i, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"state_dir = \"/x\"\nskip_code = 3\nhistory = 10\n",
		"[gates.a]\npaused = true\nreason = \"r\"\ninterval = \"5m\"\nlegacy_locks = [\"/a\"]\nlegacy_pidfiles = [\"/b\"]\nskip_code = 1\nhistory = 11\nlog_output = true\nlog_max_bytes = 4096\n",
		"gates.a = {paused = true}\n",
		"[gates]\na.paused = false\n",
		"[[gates]]\n",
		"[gates.\"a.b\"]\r\npaused = true\r\n",
		"x = \"\"\"\n[gates.a]\n\"\"\"\n",
		"[gates.a]\npaused = \"yes\"\n",
		"[gates.a]\ninterval = \"-1s\"\n",
		"[check]\nstale_factor = 2.5\ncrontab_command = []\n[[notify]]\ntype = \"command\"\nargv = [\"x\"]\n[[notify]]\ntype = \"webhook\"\nurl = \"http://h/\"\n[gates.a]\nsystemd_timer = \"a.timer\"\nhealthchecks_url = \"https://h/x\"\n",
		"notify = [{type = \"webhook\", url = \"https://h/\"}]\n",
	}
	if data, err := os.ReadFile("testdata/config/full.toml"); err == nil {
		seeds = append(seeds, string(data))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("/etc/cron-gate/config.toml", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "config ") {
				t.Fatalf("error does not start with \"config \": %q", msg)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error is not a single line: %q", msg)
			}
			if cfg != nil {
				t.Fatalf("config returned with error %q", msg)
			}
			return
		}
		if cfg == nil {
			t.Fatal("nil config and nil error")
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse result does not validate: %v", err)
		}
		for name, g := range cfg.Gates {
			if gate.CheckName(name) != nil || g.Name != name {
				t.Fatalf("bad gate %q: %+v", name, g)
			}
			if g.Paused && g.PausedLine == 0 {
				t.Fatalf("gate %q paused without a line", name)
			}
		}
	})
}

func TestConfigCheckKeys(t *testing.T) {
	src := `state_dir = "/srv/cg"

[check]
stale_factor = 3
alert_after = 1
resume_grace = "0s"
crontab_command = []
cron_d = ["/etc/cron.d", "/etc/crontab"]
systemctl_command = ["systemctl", "--user"]
metrics_file = "/var/lib/node_exporter/textfile/cron-gate.prom"

[[notify]]
type = "command"
argv = ["bark", "-g", "blog", "{title}", "{body}"]

[[notify]]
type = "webhook"
name = "ops"
url = "https://hooks.example.com/cron?key=x"
timeout = "3s"
retries = 0

[gates.translate]
interval = "4h"
failure_state_file = "/srv/blog/state/translation.json"
healthchecks_url = "https://hc-ping.com/0b7a"

[gates.autopush]
systemd_timer = "blog-autopush.timer"
failure_state_file = "/srv/s.json"
failure_state_key = "notified"
`
	cfg, err := Parse("/etc/x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	wantCheck := gate.CheckConfig{StaleFactor: 3, AlertAfter: 1, ResumeGrace: 0, ResumeGraceSet: true,
		CrontabCommand: []string{}, CronD: []string{"/etc/cron.d", "/etc/crontab"},
		SystemctlCommand: []string{"systemctl", "--user"}, MetricsFile: "/var/lib/node_exporter/textfile/cron-gate.prom"}
	if !reflect.DeepEqual(cfg.Check, wantCheck) {
		t.Errorf("check\n got  %+v\n want %+v", cfg.Check, wantCheck)
	}
	wantNotify := []gate.NotifyConfig{
		{Type: "command", Argv: []string{"bark", "-g", "blog", "{title}", "{body}"}, Timeout: 10 * time.Second, Line: 12},
		{Type: "webhook", Name: "ops", URL: "https://hooks.example.com/cron?key=x", Timeout: 3 * time.Second, Retries: 0, Line: 16},
	}
	if !reflect.DeepEqual(cfg.Notify, wantNotify) {
		t.Errorf("notify\n got  %+v\n want %+v", cfg.Notify, wantNotify)
	}
	tr, ap := cfg.Gates["translate"], cfg.Gates["autopush"]
	if tr.FailureStateFile != "/srv/blog/state/translation.json" || tr.FailureStateKey != gate.DefaultFailureStateKey ||
		tr.HealthchecksURL != "https://hc-ping.com/0b7a" || ap.SystemdTimer != "blog-autopush.timer" || ap.FailureStateKey != "notified" {
		t.Errorf("gates %+v %+v", *tr, *ap)
	}
	if cfg.Check.StaleFactorOr() != 3 || cfg.Check.AlertAfterOr() != 1 || cfg.Check.ResumeGraceOr() != 0 ||
		len(cfg.Check.CrontabCommandOr()) != 0 {
		t.Error("accessors")
	}
	// Defaults.
	d := gate.DefaultConfig().Check
	if d.StaleFactorOr() != 2.5 || d.AlertAfterOr() != 2 || d.ResumeGraceOr() != 15*time.Minute ||
		!reflect.DeepEqual(d.CrontabCommandOr(), []string{"crontab", "-l"}) || !reflect.DeepEqual(d.SystemctlCommandOr(), []string{"systemctl"}) {
		t.Error("defaults")
	}
	// A webhook's retries default to 2.
	cfg, err = Parse("/etc/x.toml", []byte("[[notify]]\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/x\"\n"))
	if err != nil || cfg.Notify[0].Retries != gate.DefaultWebhookRetries {
		t.Fatalf("%+v %v", cfg, err)
	}
	// An inline array of tables is the same thing.
	cfg, err = Parse("/etc/x.toml", []byte("notify = [{type = \"command\", argv = [\"x\"]}]\n"))
	if err != nil || len(cfg.Notify) != 1 || cfg.Notify[0].Argv[0] != "x" {
		t.Fatalf("%+v %v", cfg, err)
	}
}

func TestConfigCheckErrors(t *testing.T) {
	const P = "config /etc/x.toml"
	for _, tt := range []struct{ src, want string }{
		{"[check]\n\nstale_factr = 2\n", P + " line 3: unknown key check.stale_factr; did you mean stale_factor?"},
		{"[check]\nzzz = 1\n", P + " line 2: unknown key check.zzz; the keys allowed here are stale_factor, alert_after, ..."},
		{"check = 1\n", P + " line 1: check: must be a table ([check]), not an integer (1)"},
		{"[check]\nstale_factor = 0.5\n", P + " line 2: check.stale_factor: 0.5 is out of range; use 1 to 1000 ..."},
		{"[check]\nstale_factor = \"2\"\n", P + ` line 2: check.stale_factor: must be a number like 2.5, not a string ("2")`},
		{"[check]\nalert_after = 0\n", P + " line 2: check.alert_after: 0 is out of range; use 1 to 100 ..."},
		{"[check]\nresume_grace = \"-1m\"\n", P + ` line 2: check.resume_grace: "-1m" is negative; use a duration of 0 or more, like "15m"`},
		{"[check]\nresume_grace = 15\n", P + ` line 2: check.resume_grace: must be a duration string like "15m", not an integer (15)`},
		{"[check]\ncrontab_command = \"crontab -l\"\n", P + ` line 2: check.crontab_command: must be an array of strings like ["crontab", "-l"], not a string ("crontab -l")`},
		{"[check]\ncrontab_command = [\"\", \"-l\"]\n", P + " line 2: check.crontab_command: the command (first element) is empty"},
		{"[check]\nsystemctl_command = []\n", P + " line 2: check.systemctl_command: is empty; give the command and its arguments"},
		{"[check]\ncron_d = [\"etc/cron.d\"]\n", P + ` line 2: check.cron_d[0]: "etc/cron.d" is not an absolute path; ...`},
		{"[check]\nmetrics_file = \"x.prom\"\n", P + ` line 2: check.metrics_file: "x.prom" is not an absolute path; ...`},
		{"[notify]\ntype = \"command\"\n", P + " line 1: notify: must be an array of tables ([[notify]]), not a table"},
		{"[[notify]]\nargv = [\"x\"]\n", P + ` line 1: notify[0]: has no type; add type = "command" or type = "webhook"`},
		{"[[notify]]\ntype = \"email\"\n", P + ` line 2: notify[0].type: "email" is not a notifier type; use "command" or "webhook"`},
		{"[[notify]]\ntype = \"command\"\n\n[[notify]]\ntype = \"command\"\nargs = [\"x\"]\n", P + ` line 1: notify[0]: a command notifier needs argv = ["COMMAND", ...] (and 2 more problems)`},
		{"[[notify]]\ntype = \"command\"\nargv = [\"x\"]\nurl = \"http://x/\"\n", P + ` line 4: notify[0].url: is for type = "webhook"; a command notifier takes argv`},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"ftp://x/\"\n", P + ` line 3: notify[0].url: "ftp://x/" is not an http:// or https:// URL`},
		{"[[notify]]\ntype = \"webhook\"\n", P + ` line 1: notify[0]: a webhook notifier needs url = "https://..."`},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"https://x/\"\nretries = 11\n", P + " line 4: notify[0].retries: 11 is out of range; use 0 to 10"},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"https://x/\"\ntimeout = \"0s\"\n", P + ` line 4: notify[0].timeout: "0s" is not positive; ...`},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"https://x/\"\nurll = 1\n", P + " line 4: unknown key notify[0].urll; did you mean url?"},
		{"[gates.a]\nsystemd_timer = \"blog-autopush\"\n", P + ` line 2: gates.a.systemd_timer: "blog-autopush" has no unit type; write the full name, e.g. "blog-autopush.timer"`},
		{"[gates.a]\nsystemd_timer = \"a b.timer\"\n", P + ` line 2: gates.a.systemd_timer: "a b.timer" is not a systemd unit name`},
		{"[gates.a]\nfailure_state_file = \"state.json\"\n", P + ` line 2: gates.a.failure_state_file: "state.json" is not an absolute path; ...`},
		{"[gates.a]\nfailure_state_key = \"failure_notice\"\n", P + " line 2: gates.a.failure_state_key: is set without failure_state_file; name the worker's JSON state file too"},
		{"[gates.a]\nfailure_state_file = \"/s.json\"\nfailure_state_key = \"\"\n", P + " line 3: gates.a.failure_state_key: is empty; ..."},
		{"[gates.a]\nhealthchecks_url = \"hc-ping.com/x\"\n", P + ` line 2: gates.a.healthchecks_url: "hc-ping.com/x" is not an http:// or https:// URL`},
		{"[gates.a]\nhealthchecks_url = \"https:///x\"\n", P + ` line 2: gates.a.healthchecks_url: "https:///x" has no host`},
		{"[gates.a]\nhealthchecks_url = \"https://h/x#y\"\n", P + ` line 2: gates.a.healthchecks_url: "https://h/x#y" has a #fragment; remove it`},
		{"[gates.a]\nhealthcheck_url = \"https://h/x\"\n", P + " line 2: unknown key gates.a.healthcheck_url; did you mean healthchecks_url?"},
		{"[serve]\nlisten = \"8371\"\n", P + ` line 2: serve.listen: "8371" is not host:port (e.g. "127.0.0.1:8371")`},
		{"[serve]\nlisten = 8371\n", P + ` line 2: serve.listen: must be a string in quotes, not an integer (8371)`},
		{"[serve]\ntime_zone = \"Mars/Olympus\"\n", P + ` line 2: serve.time_zone: "Mars/Olympus" is not a time zone name (e.g. "Asia/Seoul", "UTC")`},
		{"[serve]\ntoken_file = \"token\"\n", P + ` line 2: serve.token_file: "token" is not an absolute path; ...`},
		{"[serve]\ntoken = \"x\"\n", P + " line 2: unknown key serve.token; the keys allowed here are listen, time_zone, token_file"},
		{"[etcd]\nprefix = \"/x\"\n", P + ` line 1: etcd: endpoints is missing; name every member, e.g. endpoints = ["http://etcd1:2379"]`},
		{"[etcd]\nendpoints = \"http://e:2379\"\n", P + ` line 2: etcd.endpoints: must be an array of URLs like ["http://etcd1:2379"], not a string ("http://e:2379")`},
		{"[etcd]\nendpoints = [\"e\"]\n", P + ` line 2: etcd.endpoints[0]: "e" is not an endpoint like http://HOST:2379, https://HOST:2379, HOST:2379 or unix:///PATH`},
		{"[etcd]\nendpoints = [\"http://e:2379\"]\nprefix = \"x/\"\n", P + ` line 3: etcd.prefix: "x/" must start with / and not end with / (e.g. "/cron-gate")`},
		{"[etcd]\nendpoints = [\"http://e:2379\"]\ntimeout = \"0s\"\n", P + ` line 3: etcd.timeout: "0s" is not positive; use a duration like "5s", or remove the key`},
		{"[etcd]\nendpoints = [\"http://e:2379\"]\non_coordinator_down = \"panic\"\n", P + ` line 3: etcd.on_coordinator_down: "panic" is not "skip" or "run"`},
	} {
		cfg, err := Parse("/etc/x.toml", []byte(tt.src))
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want error %q", tt.src, cfg, tt.want)
			continue
		}
		got := err.Error()
		if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
			if !strings.HasPrefix(got, prefix) {
				t.Errorf("Parse(%q) error\n got  %s\n want %s", tt.src, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("Parse(%q) error\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

func TestConfigServe(t *testing.T) {
	cfg, err := Parse("/etc/x.toml", []byte("[serve]\nlisten = \"0.0.0.0:8371\"\ntime_zone = \"Asia/Seoul\"\ntoken_file = \"/etc/cron-gate/token\"\n"))
	want := gate.ServeConfig{Listen: "0.0.0.0:8371", TimeZone: "Asia/Seoul", TokenFile: "/etc/cron-gate/token"}
	if err != nil || cfg.Serve != want {
		t.Fatalf("%+v %v", cfg, err)
	}
	c := gate.DefaultConfig()
	c.Serve.TokenFile = "rel"
	if c.Validate() == nil {
		t.Error("Validate accepted a relative token_file")
	}
}

func TestConfigEtcd(t *testing.T) {
	cfg, err := Parse("/etc/x.toml", []byte("[etcd]\nendpoints = [\"http://e1:2379\", \"http://e2:2379\"]\nprefix = \"/blog\"\ntimeout = \"3s\"\non_coordinator_down = \"run\"\n"))
	if err != nil || !cfg.Etcd.Set() || len(cfg.Etcd.Endpoints) != 2 || cfg.Etcd.Prefix != "/blog" || cfg.Etcd.TimeoutOr() != 3*time.Second || !cfg.Etcd.RunOnDown {
		t.Fatalf("%+v %v", cfg, err)
	}
	if d := gate.DefaultConfig(); d.Etcd.Set() || d.Etcd.TimeoutOr() != gate.DefaultEtcdTimeout || d.Etcd.RunOnDown {
		t.Fatal("defaults")
	}
}

func TestConfigValidateCheck(t *testing.T) {
	for i, mod := range []func(c *gate.Config){
		func(c *gate.Config) { c.Check.StaleFactor = 0.5 },
		func(c *gate.Config) { c.Check.AlertAfter = -1 },
		func(c *gate.Config) { c.Check.ResumeGrace = -1 },
		func(c *gate.Config) { c.Check.CrontabCommand = []string{""} },
		func(c *gate.Config) { c.Check.SystemctlCommand = []string{} },
		func(c *gate.Config) { c.Check.CronD = []string{"rel"} },
		func(c *gate.Config) { c.Check.MetricsFile = "rel" },
		func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: "x"}} },
		func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: gate.NotifyCommand}} },
		func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, URL: "x"}} },
		func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, URL: "http://x/", Retries: 99}}
		},
		func(c *gate.Config) { c.Gates["a"].SystemdTimer = "x" },
		func(c *gate.Config) { c.Gates["a"].FailureStateFile = "/x" },
		func(c *gate.Config) { c.Gates["a"].FailureStateKey = "k" },
		func(c *gate.Config) { c.Gates["a"].HealthchecksURL = "x" },
	} {
		c := gate.DefaultConfig()
		c.Path = "/etc/x.toml"
		c.Gates["a"] = &gate.GateConfig{Name: "a"}
		mod(c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "config /etc/x.toml: ") {
			t.Errorf("case %d: Validate() = %v", i, err)
		}
	}
}

// Every table of gate.TopTable has a decoder here: a table added to the
// table of keys without one is caught.
func TestConfigTablesDecoded(t *testing.T) {
	for _, k := range gate.TopTable.Keys {
		var src string
		switch k.Kind {
		case gate.KindTable:
			src = "[" + k.Name + "]\n"
		case gate.KindTables:
			src = "[[" + k.Name + "]]\n"
		case gate.KindNamedTables:
			src = "[" + k.Name + ".x]\n"
		default:
			continue
		}
		if _, err := Parse("/etc/x.toml", []byte(src)); err != nil && strings.Contains(err.Error(), "cannot decode this table") {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
}

// A value the decoder refuses, Validate refuses in the same words: both
// apply the one table of keys (gate/keys.go). The decoder's message (after
// "line N: ") and Validate's (after the path) must be the same.
func TestConfigValidateAgreesWithParse(t *testing.T) {
	for _, tt := range []struct {
		src string
		mod func(c *gate.Config)
	}{
		{"state_dir = \"rel\"\n", func(c *gate.Config) { c.StateDir = "rel" }},
		{"skip_code = 256\n", func(c *gate.Config) { c.SkipCode = 256 }},
		{"history = 9\n", func(c *gate.Config) { c.History = 9 }},
		{"history = 100000001\n", func(c *gate.Config) { c.History = 100000001 }},
		{"[gates.a]\ninterval = \"-1s\"\n", func(c *gate.Config) { c.Gates["a"].Interval = -time.Second }},
		{"[gates.a]\nhistory = 5\n", func(c *gate.Config) { c.Gates["a"].History = 5 }},
		{"[gates.a]\nskip_code = 300\n", func(c *gate.Config) { c.Gates["a"].SkipCode = new(300) }},
		{"[gates.a]\nlog_max_bytes = 100\n", func(c *gate.Config) { c.Gates["a"].LogMaxBytes = 100 }},
		{"[gates.a]\nlegacy_locks = [\"/ok\", \"rel\"]\n", func(c *gate.Config) { c.Gates["a"].LegacyLocks = []string{"/ok", "rel"} }},
		{"[gates.a]\nlegacy_pidfiles = [\"\"]\n", func(c *gate.Config) { c.Gates["a"].LegacyPidfiles = []string{""} }},
		{"[gates.a]\nreason = \"a\\u0007\"\n", func(c *gate.Config) { c.Gates["a"].Reason = "a\a" }},
		{"[gates.a]\nsystemd_timer = \"x\"\n", func(c *gate.Config) { c.Gates["a"].SystemdTimer = "x" }},
		{"[gates.a]\nfailure_state_file = \"rel\"\n", func(c *gate.Config) { c.Gates["a"].FailureStateFile = "rel" }},
		{"[gates.a]\nfailure_state_key = \"k\"\n", func(c *gate.Config) { c.Gates["a"].FailureStateKey = "k" }},
		{"[gates.a]\nhealthchecks_url = \"x\"\n", func(c *gate.Config) { c.Gates["a"].HealthchecksURL = "x" }},
		{"[check]\nstale_factor = 0.5\n", func(c *gate.Config) { c.Check.StaleFactor = 0.5 }},
		{"[check]\nalert_after = 101\n", func(c *gate.Config) { c.Check.AlertAfter = 101 }},
		{"[check]\nresume_grace = \"-1s\"\n", func(c *gate.Config) { c.Check.ResumeGrace, c.Check.ResumeGraceSet = -time.Second, true }},
		{"[check]\ncrontab_command = [\"\"]\n", func(c *gate.Config) { c.Check.CrontabCommand = []string{""} }},
		{"[check]\nsystemctl_command = []\n", func(c *gate.Config) { c.Check.SystemctlCommand = []string{} }},
		{"[check]\ncron_d = [\"rel\"]\n", func(c *gate.Config) { c.Check.CronD = []string{"rel"} }},
		{"[check]\nmetrics_file = \"rel\"\n", func(c *gate.Config) { c.Check.MetricsFile = "rel" }},
		{"[[notify]]\ntype = \"email\"\n", func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: "email"}} }},
		{"[[notify]]\nname = \"x\"\n", func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Name: "x"}} }},
		{"[[notify]]\ntype = \"command\"\n", func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: gate.NotifyCommand}} }},
		{"[[notify]]\ntype = \"webhook\"\n", func(c *gate.Config) { c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook}} }},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"ftp://x/\"\n", func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, URL: "ftp://x/"}}
		}},
		{"[[notify]]\ntype = \"command\"\nargv = [\"x\"]\nurl = \"http://x/\"\n", func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyCommand, Argv: []string{"x"}, URL: "http://x/"}}
		}},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"http://x/\"\nargv = [\"x\"]\n", func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, Argv: []string{"x"}, URL: "http://x/"}}
		}},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"http://x/\"\nretries = 11\n", func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, URL: "http://x/", Retries: 11}}
		}},
		{"[[notify]]\ntype = \"webhook\"\nurl = \"http://x/\"\ntimeout = \"-1s\"\n", func(c *gate.Config) {
			c.Notify = []gate.NotifyConfig{{Type: gate.NotifyWebhook, URL: "http://x/", Timeout: -time.Second}}
		}},
		{"[serve]\nlisten = \"8371\"\n", func(c *gate.Config) { c.Serve.Listen = "8371" }},
		{"[serve]\ntime_zone = \"Mars/Olympus\"\n", func(c *gate.Config) { c.Serve.TimeZone = "Mars/Olympus" }},
		{"[serve]\ntoken_file = \"rel\"\n", func(c *gate.Config) { c.Serve.TokenFile = "rel" }},
		{"[etcd]\nendpoints = [\"e\"]\n", func(c *gate.Config) { c.Etcd.Endpoints = []string{"e"} }},
		{"[etcd]\nprefix = \"/x\"\n", func(c *gate.Config) { c.Etcd.Prefix = "/x" }},
		{"[etcd]\non_coordinator_down = \"run\"\n", func(c *gate.Config) { c.Etcd.RunOnDown = true }},
		{"[etcd]\nendpoints = [\"http://e:2379\"]\nprefix = \"x/\"\n", func(c *gate.Config) {
			c.Etcd.Endpoints, c.Etcd.Prefix = []string{"http://e:2379"}, "x/"
		}},
		{"[etcd]\nendpoints = [\"http://e:2379\"]\ntimeout = \"-1s\"\n", func(c *gate.Config) {
			c.Etcd.Endpoints, c.Etcd.Timeout = []string{"http://e:2379"}, -time.Second
		}},
	} {
		_, err := Parse("/etc/x.toml", []byte(tt.src))
		if err == nil {
			t.Errorf("Parse(%q) accepted it", tt.src)
			continue
		}
		parsed := err.Error()
		if _, rest, ok := strings.Cut(parsed, " line "); ok {
			_, parsed, _ = strings.Cut(rest, ": ")
		}
		c, err := Parse("/etc/x.toml", []byte("[gates.a]\n"))
		if err != nil {
			t.Fatal(err)
		}
		tt.mod(c)
		err = c.Validate()
		if err == nil {
			t.Errorf("%q: Validate accepted it; Parse said %s", tt.src, parsed)
			continue
		}
		validated := strings.TrimPrefix(err.Error(), "config /etc/x.toml: ")
		if validated != parsed {
			t.Errorf("%q:\n Parse    %s\n Validate %s", tt.src, parsed, validated)
		}
	}
}

// Durations in the config read days as every duration does (package
// duration): interval = "1d12h", resume_grace = "2d".
func TestConfigDurationDays(t *testing.T) {
	cfg, err := Parse("/etc/x.toml", []byte("[check]\nresume_grace = \"2d\"\n[gates.g]\ninterval = \"1d12h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if iv := cfg.Gates["g"].Interval; iv != 36*time.Hour {
		t.Errorf("interval = %v, want 36h", iv)
	}
	if g := cfg.Check.ResumeGrace; g != 48*time.Hour {
		t.Errorf("resume_grace = %v, want 48h", g)
	}
}
