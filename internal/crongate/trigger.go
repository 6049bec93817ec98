//go:build linux

package crongate

// cron-gate trigger NAME: do now what cron would do with the gate's line,
// recorded as a manual run (docs/cron-gate.md, "Run now"; the identity
// rules are docs/security.md's "Whose identity trigger uses").
//
// The line is the first crontab line cron runs for the gate whose
// cron-gate uses this config. trigger runs it as cron would: as its owner
// (a system crontab line's user field; a user crontab's owner), with the
// environment cron builds (cronEnv), in the owner's HOME (/ when it cannot
// be entered), the whole line given to SHELL -c, its input after an
// unescaped %. The line's own cron-gate learns that the run is manual
// from CRON_GATE_TRIGGER (takeTrigger) and records it so. A config
// `command` runs through the gate in this process, the command itself as
// the config file's owner, under the same rules.
//
// As root, trigger takes the owner's groups, gid and uid as cron does; as
// anyone else it runs only the caller's own lines and refuses (125) the
// others, naming their owner.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/hcping"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// TriggerCmd is `cron-gate trigger NAME`.
type TriggerCmd struct {
	Name  string `arg:"" help:"Gate name."`
	Force bool   `help:"Run even while the gate is paused (the journal says so); every other check still applies."`
	By    string `hidden:"" placeholder:"WHO" help:"Who asked (the dashboard's run now); default: the user and host."`
}

// check refuses a --by that is not one printable line.
func (c *TriggerCmd) check([]string) error {
	if c.By != "" && (len(c.By) > 200 || safetext.Line(c.By) != c.By) {
		return usageError{"--by must be one printable line of at most 200 bytes"}
	}
	return nil
}

// Run is `cron-gate trigger`.
func (c *TriggerCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	return exit(trigger(cfg, e, c))
}

// triggerJob is what a trigger runs, and as whom.
type triggerJob struct {
	from  string     // for messages: "the config's command" or "/etc/cron.d/x:3"
	owner *user.User // who runs it
	whose string     // why it is the owner's, for messages
	text  string     // a crontab line's command, as cron gives it to the shell
	vars  []string   // the crontab's NAME=value settings above the line
	argv  []string   // the config's command (text is "")
}

// triggerEnv is the variable that tells the line's own cron-gate that
// this run is a manual one, and by whom (a JSON triggerMark).
const triggerEnv = gate.TriggerEnv

// triggerMark is what trigger tells the line's cron-gate: the gate and
// config (absolute) it means, who asked, --force, and whether to say why
// a run was skipped (trigger is asked by a person, not by cron).
type triggerMark struct {
	Gate   string `json:"gate"`
	Config string `json:"config"`
	By     string `json:"by"`
	Force  bool   `json:"force,omitempty"`
	Report bool   `json:"report,omitempty"`
}

func trigger(cfg *gate.Config, e *env, c *TriggerCmd) int {
	if err := gate.CheckName(c.Name); err != nil {
		e.out.Errorf("%v", err)
		return runner.ExitFailure
	}
	if err := CheckKnown(cfg, e.ps, c.Name); err != nil {
		if u, ok := errors.AsType[*UnknownGateError](err); ok {
			e.out.Errorf("trigger %s: %s", c.Name, u.What())
			return runner.ExitFailure
		}
	}
	cfgPath := configPathOf(e.cli.Config)
	job, err := jobOf(cfg, cfg.Gate(c.Name), cfgPath)
	if err != nil {
		e.out.Errorf("trigger %s: %v", c.Name, err)
		e.out.Hintf("set command = [\"PROGRAM\", \"ARG\", ...] in [gates.%s], or add a `cron-gate %s -- COMMAND` line to a crontab cron reads", c.Name, c.Name)
		return runner.ExitFailure
	}
	cred, err := job.identity()
	if err != nil {
		e.out.Errorf("trigger %s: %v", c.Name, err)
		e.out.Hintf("run it as %s (sudo -u %s cron-gate trigger %s), or as root", job.owner.Username, job.owner.Username, c.Name)
		return runner.ExitFailure
	}
	by := c.By
	if by == "" {
		by = gate.Who()
	}
	environ := cronEnv(job.vars, job.owner)
	home := envValue(environ, "HOME")
	if job.text == "" {
		// Through the gate here; the command as its owner under cron.
		e.out.ReportSkips = true // asked by a person: say why it did not run (-q silences)
		return gate.Run(gate.Invocation{
			Gate: c.Name, Argv: job.argv, Config: cfg, Pauses: e.ps, KillAfter: runner.DefaultKillAfter,
			Out: e.out, Sigs: e.sigs, Observer: hcping.New,
			ManualBy: by, Force: c.Force,
			Environ: environ, Dir: home, Credential: cred,
		})
	}
	mark, _ := json.Marshal(triggerMark{Gate: c.Name, Config: cfgPath, By: by, Force: c.Force, Report: !e.cli.Quiet})
	environ = append(environ, triggerEnv+"="+string(mark))
	shell := envValue(environ, "SHELL")
	if !strings.HasPrefix(shell, "/") {
		e.out.Errorf("trigger %s: %s sets SHELL=%s, which is not an absolute path: cron cannot execute it either", c.Name, job.from, safetext.Quote(shell))
		return runner.ExitNotFound
	}
	command, input := splitPercent(job.text)
	child, err := runner.Prepare(runner.Spec{Argv: []string{shell, "-c", command}, Environ: environ, Dir: home,
		Credential: cred, Stdin: strings.NewReader(input)})
	if err == nil {
		err = child.Start()
	}
	if err != nil {
		e.out.Errorf("trigger %s: %s: %v", c.Name, job.from, err)
		return runner.ExitCode(err)
	}
	return child.Wait(e.sigs, time.Now()).Code
}

// configPathOf is the config a cron-gate given --config flag (or
// CRON_GATE_CONFIG) reads, absolute.
func configPathOf(flag string) string {
	flag, _ = gate.ConfigPath(flag)
	if abs, err := filepath.Abs(flag); err == nil {
		return abs
	}
	return filepath.Clean(flag)
}

// sameConfig tells whether two config paths name the same file: the same
// file when both exist, else the same absolute path.
func sameConfig(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// jobOf finds what trigger runs for gate gc of the config at cfgPath: the
// config's `command` (as the config file's owner), else the first line
// cron runs for the gate whose cron-gate reads this config: its --config,
// else the crontab's CRON_GATE_CONFIG, else the default config (a
// relative path from the owner's HOME, where cron starts the line).
func jobOf(cfg *gate.Config, gc *gate.GateConfig, cfgPath string) (*triggerJob, error) {
	if gc.Command != nil {
		owner, err := fileOwner(cfgPath)
		if err != nil {
			return nil, err
		}
		return &triggerJob{from: "the config's command", owner: owner, argv: gc.Command,
			whose: "the owner of config " + cfgPath}, nil
	}
	probe := watch.NewSystemProbe(cfg.Check)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	scan, err := probe.Crontabs(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("no command in the config, and the crontab cannot be read: %v", err)
	case scan == nil:
		return nil, errors.New("no command in the config, and no crontab is read (crontab_command = [], cron_d = [])")
	}
	runs, _ := scan.Find(gc.Name) // only lines cron runs
	var other []string
	for _, j := range runs {
		owner, whose, err := lineOwner(j, probe.CrontabCommand, cfgPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", j.Where(), err)
		}
		if c := lineConfig(j, owner); !sameConfig(c, cfgPath) {
			other = append(other, j.Where()+" (config "+c+")")
			continue
		}
		return &triggerJob{from: j.Where(), owner: owner, whose: whose, text: j.Text, vars: j.Env}, nil
	}
	if len(other) > 0 {
		return nil, fmt.Errorf("no command in the config, and the cron-gate %s lines cron runs read another config: %s", gc.Name, strings.Join(other, ", "))
	}
	return nil, fmt.Errorf("no command in the config, and no cron-gate %s line that cron runs in %s", gc.Name, scan.Where)
}

// lineConfig is the config the line's cron-gate reads (configPathOf from
// the owner's HOME).
func lineConfig(j watch.CrontabJob, owner *user.User) string {
	c := j.Config
	if c == "" {
		c = envValue(j.Env, "CRON_GATE_CONFIG")
	}
	c, _ = gate.ConfigPath(c)
	if !filepath.IsAbs(c) {
		home := envValue(j.Env, "HOME")
		if home == "" {
			home = owner.HomeDir
		}
		c = filepath.Join(home, c)
	}
	return filepath.Clean(c)
}

// lineOwner is the user cron runs a crontab line as: a system crontab
// line's user field; for the crontab crontab_command lists, the user its
// -u names when it is crontab(1), the caller when it is crontab without
// -u (crontab -l lists the caller's own), else the config file's owner,
// who chose the command.
func lineOwner(j watch.CrontabJob, crontabCommand []string, cfgPath string) (*user.User, string, error) {
	if j.Source != watch.UserCrontab {
		u, err := lookupUser(j.User)
		return u, "the user field of " + j.Where(), err
	}
	listed := strings.Join(crontabCommand, " ")
	if len(crontabCommand) > 0 && path.Base(crontabCommand[0]) == "crontab" {
		if name := crontabUser(crontabCommand[1:]); name != "" {
			u, err := lookupUser(name)
			return u, "the crontab " + listed + " lists", err
		}
		u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
		if err != nil {
			return nil, "", fmt.Errorf("uid %d is not in the password database: %v", os.Geteuid(), err)
		}
		return u, "the crontab " + listed + " lists (the caller's own)", nil
	}
	u, err := fileOwner(cfgPath)
	return u, "the crontab " + listed + " lists (taken as the config owner's, who chose the command)", err
}

// crontabUser is the user crontab(1)'s -u option names in args ("" none),
// read as its getopt does ("-u NAME", "-uNAME", "-lu NAME").
func crontabUser(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return ""
		}
		if k := strings.IndexByte(a, 'u'); k > 0 {
			if rest := a[k+1:]; rest != "" {
				return rest
			}
			if i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// lookupUser looks a user up in the password database (os/user).
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %s is not in the password database: %v", safetext.Quote(name), err)
	}
	return u, nil
}

// fileOwner is the user who owns the file at p.
func fileOwner(p string) (*user.User, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return nil, fmt.Errorf("config %s: %v", p, err)
	}
	u, err := user.LookupId(strconv.Itoa(int(st.Uid)))
	if err != nil {
		return nil, fmt.Errorf("config %s: its owner, uid %d, is not in the password database", p, st.Uid)
	}
	return u, nil
}

// identity is the credential the job's command runs with: as root, the
// owner's groups, gid and uid (cron's setgid, initgroups, setuid); the
// caller's own when the owner is the caller (nil); for anyone else an
// error naming the owner.
func (j *triggerJob) identity() (*syscall.Credential, error) {
	uid, err1 := strconv.ParseUint(j.owner.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(j.owner.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has uid %s, gid %s", j.owner.Username, j.owner.Uid, j.owner.Gid)
	}
	euid := os.Geteuid()
	switch {
	case euid == 0:
		ids, err := j.owner.GroupIds()
		if err != nil {
			return nil, fmt.Errorf("the groups of user %s: %v", j.owner.Username, err)
		}
		groups := make([]uint32, 0, len(ids))
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil {
				groups = append(groups, uint32(g))
			}
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
	case uint64(euid) == uid:
		return nil, nil
	}
	may := j.owner.Username + " or root"
	if uid == 0 {
		may = "root"
	}
	return nil, fmt.Errorf("%s runs as user %s (%s): only %s may run it", j.from, j.owner.Username, j.whose, may)
}

// cronEnv is the environment Debian's cron gives a job of the owner's
// crontab (entry.c's load_entry): the crontab's settings (vars, a later
// one of a name winning), then SHELL=/bin/sh, HOME from the password
// database and PATH=/usr/bin:/bin unless the crontab sets them, and
// LOGNAME and USER from the password database, which the crontab cannot
// change. Nothing of the caller's environment.
func cronEnv(vars []string, owner *user.User) []string {
	var env []string
	set := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		for i, old := range env {
			if n, _, _ := strings.Cut(old, "="); n == name {
				env[i] = kv
				return
			}
		}
		env = append(env, kv)
	}
	for _, kv := range vars {
		set(kv)
	}
	if !hasVar(env, "SHELL") {
		set("SHELL=/bin/sh")
	}
	if !hasVar(env, "HOME") {
		set("HOME=" + owner.HomeDir)
	}
	if !hasVar(env, "PATH") {
		set("PATH=/usr/bin:/bin")
	}
	set("LOGNAME=" + owner.Username)
	set("USER=" + owner.Username)
	return env
}

// hasVar tells whether env sets name.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return true
		}
	}
	return false
}

// envValue is the value env gives name ("" unset).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, _ := strings.Cut(kv, "="); n == name {
			v = val
		}
	}
	return v
}

// splitPercent splits a crontab command as cron's child_process does:
// the first % not escaped by a backslash ends the command, and what
// follows is the command's input, each further % a newline (\% a %),
// ending with a newline. In the command, \% is % and \\ is \; other
// backslashes stay for the shell.
func splitPercent(text string) (command, input string) {
	command, input, _ = splitPercentCut(text)
	return command, input
}

// splitPercentCut is splitPercent, and whether an unescaped % cut the
// command (adopt leaves such a line alone).
func splitPercentCut(text string) (command, input string, cut bool) {
	var cmd []byte
	rest := ""
	escaped := false
	for i := 0; i < len(text); i++ {
		ch := text[i]
		if escaped {
			if ch == '%' || ch == '\\' {
				cmd[len(cmd)-1] = ch
			} else {
				cmd = append(cmd, ch)
			}
			escaped = false
			continue
		}
		if ch == '%' {
			rest, cut = text[i+1:], true
			break
		}
		cmd = append(cmd, ch)
		escaped = ch == '\\'
	}
	if !cut || rest == "" {
		return string(cmd), "", cut
	}
	var in []byte
	needNewline := false
	escaped = false
	for i := 0; i < len(rest); i++ {
		ch := rest[i]
		if escaped {
			if ch != '%' {
				in = append(in, '\\')
			}
		} else if ch == '%' {
			ch = '\n'
		}
		escaped = ch == '\\'
		if !escaped {
			in = append(in, ch)
			needNewline = ch != '\n'
		}
	}
	if escaped {
		in = append(in, '\\')
	}
	if needNewline {
		in = append(in, '\n')
	}
	return string(cmd), string(in), true
}

// takeTrigger reads and removes CRON_GATE_TRIGGER (so that neither the
// command nor a cron-gate it starts sees it): the manual run it asks for,
// when it names this gate and this config (configFlag as --config or
// CRON_GATE_CONFIG give it); nil otherwise.
func takeTrigger(gateName, configFlag string) *triggerMark {
	v, ok := os.LookupEnv(triggerEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(triggerEnv)
	var m triggerMark
	if json.Unmarshal([]byte(v), &m) != nil || m.Gate != gateName || m.By == "" ||
		safetext.Line(m.By) != m.By || !sameConfig(configPathOf(configFlag), m.Config) {
		return nil
	}
	return &m
}

// startTrigger is the dashboard's "run now": it checks that the gate's
// command can be found and that this process may run it (jobOf,
// identity), then starts `cron-gate trigger NAME --by WHO` (this binary,
// with the same --config) in its own session, its input and output on
// /dev/null (the journal, and the output log with log_output, keep what
// happened), and returns at once. The child gets this environment
// without the dashboard's token; what it runs gets cron's (cronEnv). It
// is waited for in the background; it outlives a stopped serve.
func startTrigger(cfgFlag string, cfg *gate.Config, name, who string) (string, error) {
	job, err := jobOf(cfg, cfg.Gate(name), configPathOf(cfgFlag))
	if err != nil {
		return "", err
	}
	if _, err := job.identity(); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	args := []string{}
	if cfgFlag != "" {
		args = append(args, "--config", cfgFlag)
	}
	args = append(args, "-q", "trigger", name, "--by", who)
	cmd := exec.Command(exe, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRON_GATE_TOKEN=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go cmd.Wait()
	return fmt.Sprintf("started a run of gate %s through the gate (its state shows how it goes)", name), nil
}
