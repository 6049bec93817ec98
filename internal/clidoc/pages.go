//go:build linux

package clidoc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/crongate"
	"github.com/crongate/crongate/internal/runner"
	wc "github.com/crongate/crongate/internal/withlock"
)

// Options are what the generated files say about the build.
type Options struct {
	Version string // the package version, in each page's footer
	Date    string // the pages' date (YYYY-MM-DD): the commit's, so that builds are reproducible
}

// File is one generated file, its path relative to the output directory.
type File struct {
	Path string
	Data []byte
}

// Files generates every file: the three man pages and, for both
// programs, the bash, zsh and fish completions. It fails only if a
// command line's model cannot be built.
func Files(o Options) ([]File, error) {
	wl, cg, err := Models()
	if err != nil {
		return nil, err
	}
	who, err := WhoModel()
	if err != nil {
		return nil, err
	}
	files := []File{
		{"man/man1/withlock.1", []byte(withlockPage(wl, who, o))},
		{"man/man1/cron-gate.1", []byte(cronGatePage(cg, o))},
		{"man/man5/cron-gate.toml.5", []byte(configPage(o))},
	}
	for _, p := range []struct {
		c     *Command
		gates bool
	}{{WithlockCompletion(wl, who), false}, {cg, true}} {
		files = append(files,
			File{"completions/bash/" + p.c.Name, []byte(Bash(p.c, p.gates))},
			File{"completions/zsh/_" + p.c.Name, []byte(Zsh(p.c, p.gates))},
			File{"completions/fish/" + p.c.Name + ".fish", []byte(Fish(p.c, p.gates))},
		)
	}
	return files, nil
}

// Models returns withlock's and cron-gate's command lines, from the
// parsers the binaries use.
func Models() (withlock, cronGate *Command, err error) {
	kw, err := wc.Model(wc.Withlock)
	if err != nil {
		return nil, nil, fmt.Errorf("withlock's command line: %w", err)
	}
	kc, err := crongate.Model()
	if err != nil {
		return nil, nil, fmt.Errorf("cron-gate's command line: %w", err)
	}
	return FromKong(kw), FromKong(kc), nil
}

// WhoModel returns `withlock who`'s command line, which withlock parses
// apart from its own (a question, not a run): its section of withlock(1)
// is generated from it.
func WhoModel() (*Command, error) {
	k, err := wc.WhoModel(wc.Withlock)
	if err != nil {
		return nil, fmt.Errorf("withlock who's command line: %w", err)
	}
	c := FromKong(k)
	c.Name = "who"
	return c, nil
}

// WithlockCompletion is withlock's command line as its completions see
// it: its own form, and who as a subcommand apart (Command.Apart).
func WithlockCompletion(wl, who *Command) *Command {
	c, w := *wl, *who
	w.Apart = true
	c.Subs = append(slices.Clone(wl.Subs), &w)
	return &c
}

// runForm is cron-gate's hidden subcommand that is its default form,
// `cron-gate NAME -- COMMAND` (the parser inserts it).
const runForm = "run"

// exitCode is one row of a page's EXIT STATUS.
type exitCode struct{ code, meaning string }

// exitCodes are the codes both wrappers share (runner's constants);
// lost adds the etcd backend's.
func exitCodes(skipHow string, lost bool) []exitCode {
	codes := []exitCode{
		{"the command's own", "The command ran and exited with it."},
		{strconv.Itoa(runner.ExitSkip), "Skipped: " + skipHow},
	}
	if lost {
		codes = append(codes, exitCode{strconv.Itoa(runner.ExitLost), "etcd backend: the lease was lost while the command ran, and the command was stopped (another host may hold its locks now)."})
	}
	return append(codes,
		exitCode{strconv.Itoa(runner.ExitTimeout), "The command ran past --timeout and was stopped (TERM, then KILL to its process group)."},
		exitCode{strconv.Itoa(runner.ExitFailure), "Our own failure: bad usage, an unusable config, lock dir or state dir; the command did not run."},
		exitCode{strconv.Itoa(runner.ExitCannotRun), "The command was found but cannot be executed."},
		exitCode{strconv.Itoa(runner.ExitNotFound), "The command was not found."},
		exitCode{strconv.Itoa(runner.ExitSignalBase) + "+N", fmt.Sprintf("The command died of signal N (%d for KILL, %d for TERM), or the wrapper got signal N before the command started.", runner.ExitSignalBase+9, runner.ExitSignalBase+15)},
	)
}

// envVar is one row of a page's ENVIRONMENT.
type envVar struct{ name, meaning string }

// flagEnvs lists the environment variables that set c's flags, as kong's
// model names them (env tags), from c and every subcommand.
func flagEnvs(c *Command) []envVar {
	var out []envVar
	var walk func(c *Command)
	walk = func(c *Command) {
		for _, f := range c.Flags {
			for _, e := range f.Envs {
				out = append(out, envVar{e, "Sets --" + f.Long + ": " + f.Help})
			}
		}
		for _, s := range c.Subs {
			walk(s)
		}
	}
	walk(c)
	return out
}

// page writes what every page of a program has: NAME, SYNOPSIS lines,
// DESCRIPTION.
func head(r *roff, c *Command, section int, summary string, o Options) {
	r.th(strings.ToUpper(c.Name), section, o.Date, "cron-gate "+o.Version, "cron-gate and withlock")
	r.sh("NAME")
	r.rawLine(esc(c.Name) + ` \- ` + esc(summary))
}

// firstParagraph is the text of s up to its first blank line.
func firstParagraph(s string) string {
	p, _, _ := strings.Cut(s, "\n\n")
	return p
}

// options writes one tagged paragraph per flag.
func options(r *roff, flags []Flag) {
	for _, f := range flags {
		tag := bold("--" + f.Long)
		if f.Short != 0 {
			tag = bold("-"+string(f.Short)) + ", " + tag
		}
		if f.Placeholder != "" {
			tag += "=" + italic(f.Placeholder)
		}
		body := f.Help
		if f.Repeatable && !strings.Contains(body, "repeatable") {
			body += " Repeatable."
		}
		if f.Default != "" && !strings.Contains(body, f.Default) {
			body += " Default: " + f.Default + "."
		}
		for _, e := range f.Envs {
			body += " Also set by $" + e + "."
		}
		r.tp(tag, body)
	}
}

// args writes one tagged paragraph per positional argument.
func args(r *roff, as []Arg) {
	for _, a := range as {
		r.tp(italic(a.Name), a.Help)
	}
}

// usage is a subcommand's synopsis after the program's name and
// "[options]", in roff.
func usage(c *Command) string {
	var parts []string
	if c.Name != runForm {
		parts = append(parts, bold(c.Name))
	}
	for _, a := range c.Args {
		if a.Optional {
			parts = append(parts, "["+italic(a.Name)+"]")
		} else {
			parts = append(parts, italic(a.Name))
		}
	}
	if c.Name == runForm {
		parts = append(parts, bold("--"), italic("COMMAND"), "["+italic("ARG")+" ...]")
	}
	return strings.Join(parts, " ")
}

func exitStatus(r *roff, codes []exitCode) {
	r.sh("EXIT STATUS")
	for _, e := range codes {
		r.tp(bold(e.code), e.meaning)
	}
}

func environment(r *roff, vars []envVar) {
	r.sh("ENVIRONMENT")
	for _, v := range vars {
		r.tp(bold(v.name), v.meaning)
	}
}

func files(r *roff, items [][2]string) {
	r.sh("FILES")
	for _, it := range items {
		r.tp(italic(it[0]), it[1])
	}
}

func seeAlso(r *roff, refs ...string) {
	r.sh("SEE ALSO")
	var parts []string
	for _, ref := range refs {
		name, sec, _ := strings.Cut(ref, "(")
		parts = append(parts, bold(name)+"("+sec)
	}
	r.raw(strings.Join(parts, ",\n"))
	r.pp()
	r.text("The reference, with the test that proves each promise, is withlock.md, cron-gate.md, config.md and exit-codes.md: in /usr/share/doc/cron-gate/ from the Debian package (compressed: zless /usr/share/doc/cron-gate/withlock.md.gz), in share/doc/cron-gate/ of the release tarball, and in docs/ of the source.")
}

// crontabExample is the README's crontab, the lines both pages show.
var crontabExample = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"",
	"# Edit one post at a time: one lock per file the workers touch.",
	"*/30 * * * *  cron-gate terms -- withlock --paths-from /srv/blog/queue/terms.txt -- python3 term_worker.py",
	"",
	"# At most 6 classifiers at once, never two on the same KO/EN pair.",
	"30,45 * * * * cron-gate classifier -- withlock --slots 6 --paths /srv/blog/ko/a.md,/srv/blog/en/a.md -- python3 classify.py",
	"",
	"# Wait up to 20 s for busy files instead of skipping; stop a run after 10 minutes.",
	"0 * * * *     cron-gate translate -- withlock --wait 20s --timeout 10m --paths /srv/blog/en/a.md -- python3 translate.py",
	"",
	"# The watchdog, every 5 minutes.",
	"*/5 * * * *   cron-gate check",
}

func withlockPage(c, who *Command, o Options) string {
	var r roff
	head(&r, c, 1, "run a command while holding per-path flock locks and concurrency slots, all or nothing", o)
	r.sh("SYNOPSIS")
	r.raw(bold(c.Name) + " [" + italic("options") + "] " + bold("--") + " " + italic("COMMAND") + " [" + italic("ARG") + " ...]")
	r.pp()
	r.raw(bold(c.Name) + " " + bold("who") + " [" + italic("options") + "] [" + italic("PATH") + " ...]")
	r.sh("DESCRIPTION")
	r.text(firstParagraph(c.Help))
	r.pp()
	r.text("All or nothing: slots are taken first (in pool order, the first free slot of each pool), then the paths in sorted canonical order; if anything is busy, everything taken is released and the command does not run (exit " + strconv.Itoa(runner.ExitSkip) + ", or --skip-code). withlock never deletes a lock file and never creates the paths it locks. The locks are held until the command exits; the command inherits them as descriptors 3, 4, ... and so keeps them if withlock is killed.")
	r.pp()
	r.text("withlock alone runs every local command line. --backend etcd it hands to withlock-etcd, found next to itself or on PATH: install the two together for etcd.")
	r.sh("OPTIONS")
	options(&r, c.Flags)
	r.pp()
	r.text("Durations are Go durations: 300ms, 90s, 1h30m. Everything after the first -- is the command, untouched.")
	r.sh("WITHLOCK WHO")
	for i, para := range strings.Split(wc.WhoDescription, "\n\n") {
		if i > 0 {
			r.pp()
		}
		r.text(strings.Join(strings.Fields(para), " "))
	}
	r.pp()
	r.text("A withlock line can be pasted whole after who: the flags that only shape a run are checked and ignored, and what follows -- is not looked at. Its options:")
	args(&r, who.Args)
	options(&r, who.Flags)
	exitStatus(&r, exitCodes("something was busy (a path's lock or every slot of a pool), or with the etcd backend the cluster was down under --on-coordinator-down skip. --skip-code chooses another code.", true))
	vars := flagEnvs(c)
	vars = append(vars,
		envVar{"WITHLOCK_BACKEND", "The backend when --backend is not given: local or etcd."},
		envVar{"WITHLOCK_ETCD_ENDPOINTS", "etcd: the cluster's endpoints when --endpoints is not given (comma-separated)."},
		envVar{"WITHLOCK_KEY_ROOT", "etcd: the shared tree's root on this host when --key-root is not given."},
		envVar{"GOMAXPROCS", "etcd: withlock-etcd runs its Go code on one thread at a time (GOMAXPROCS=1: a call mostly waits, and costs less CPU so) unless this is set. The command is not affected."},
		envVar{"WITHLOCK_PATHS", "Set for the command: the canonical paths held, as a JSON array ([] when only slots were asked for). Unset when longer than 64 KiB; then WITHLOCK_PATHS_FD is set."},
		envVar{"WITHLOCK_PATHS_FD", "Set for the command instead of WITHLOCK_PATHS for a long list: a descriptor of a memory file holding that JSON array (read /proc/self/fd/$WITHLOCK_PATHS_FD)."},
		envVar{"WITHLOCK_SLOT", "Set for the command: the slot index taken in each pool, comma-separated in --slots order (2,0)."},
		envVar{"WITHLOCK_CANDIDATE", "Set for the command with --first-of: the index of the candidate set taken (0-based, in --candidates-from order)."},
		envVar{"CRON_GATE_BUSY_FD", "Set by cron-gate: when the locks are busy (local locks), withlock writes them into that memory file for cron-gate's journal; it is unset, and the descriptor closed, for the command."},
		envVar{"WITHLOCK_KEY_PATHS", "etcd: set for the command: the paths relative to --key-root, as a JSON array in the order of WITHLOCK_PATHS."},
		envVar{"WITHLOCK_FENCE_REVISION", "etcd: set for the command: the revision of the transaction that took the set, strictly increasing for successive holders of any one path or slot (a fencing token)."},
		envVar{"WITHLOCK_FENCE_LEASE", "etcd: set for the command: the lease ID in hex, as etcdctl lease list prints it."},
	)
	environment(&r, vars)
	files(&r, [][2]string{
		{wc.DefaultLockDir + "/", "The default lock dir, the Python workers' own: one file per path, named sha256(resolved path) + \".lock\". Created (mode 0775 before umask) if missing; in a world-writable place every component is opened without following another user's symlinks."},
		{"LOCKDIR/withlock-slot-{i}.lock", "The default slot files of a single pool, {i} from 0 to N-1."},
		{"/proc/locks", "Read to name the process that holds a busy lock."},
		{"~/.cache/withlock/etcd-versions.json", "etcd: the members' server versions, read by one call in ten minutes per list of endpoints so that the others need not connect to every member ($XDG_CACHE_HOME/withlock when set). Deleting it is always safe."},
	})
	r.sh("EXAMPLES")
	r.text("Lock the file a job edits; skip the tick if another job holds it:")
	r.example("withlock --paths /srv/blog/ko/a.md -- python3 terms.py", "echo $?    # the command's own code, or 75 if a.md was busy")
	r.pp()
	r.text("In a crontab, behind a gate (see cron-gate(1)); cron starts jobs with PATH=/usr/bin:/bin, so set PATH where the binaries are elsewhere:")
	r.example(crontabExample...)
	seeAlso(&r, "cron-gate(1)", "cron-gate.toml(5)", "flock(1)", "flock(2)", "crontab(5)")
	return r.String()
}

func cronGatePage(c *Command, o Options) string {
	var r roff
	head(&r, c, 1, "run a cron job through a gate that can be paused, and journal every run", o)
	r.sh("SYNOPSIS")
	run := c.Sub(runForm)
	subs := c.Visible()
	lines := []string{}
	prefix := bold(c.Name) + " [" + italic("options") + "] "
	if run != nil {
		lines = append(lines, prefix+usage(run))
	}
	for _, s := range subs {
		lines = append(lines, prefix+usage(s))
	}
	r.raw(strings.Join(lines, "\n.br\n"))
	r.sh("DESCRIPTION")
	r.text(firstParagraph(c.Help))
	r.pp()
	r.text("A gate is a name for one crontab line's job. It need not be declared in the config to run; declaring it ([gates.NAME], see cron-gate.toml(5)) adds a pause, legacy locks, an interval for the watchdog, a skip code, a history bound and an output log. A run is skipped (exit " + strconv.Itoa(runner.ExitSkip) + ") while its gate is paused, in the config or from the command line, or while another process holds one of its legacy locks or pidfiles; a config that cannot be read never lets a job run. The journal records every start, end and skip with its reason.")
	r.pp()
	r.text("cron-gate is one file for every local feature: a gate whose validated config is cached runs without decoding the config again; a config with [etcd] is handed to cron-gate-etcd, found next to cron-gate or on PATH (Debian package cron-gate-etcd).")
	r.sh("OPTIONS")
	options(&r, c.Flags)
	r.sh("COMMANDS")
	if run != nil {
		r.ss(c.Name + " NAME -- COMMAND")
		r.text(run.Help)
		args(&r, run.Args)
		options(&r, run.Flags)
	}
	for _, s := range subs {
		heading := c.Name + " " + s.Name
		for _, a := range s.Args {
			if a.Optional {
				heading += " [" + a.Name + "]"
			} else {
				heading += " " + a.Name
			}
		}
		r.ss(heading)
		r.text(s.Help)
		args(&r, s.Args)
		options(&r, s.Flags)
	}
	exitStatus(&r, exitCodes("the gate is paused or a legacy lock or pidfile is held (skip_code in the config chooses another code).", false))
	r.pp()
	r.text("cron-gate check exits 0 when it checked, 1 when it checked but a notification could not be delivered (retried at the next check), " + strconv.Itoa(runner.ExitFailure) + " when it could not check. cron-gate edit exits 0 when the config was saved (or not changed), " + strconv.Itoa(runner.ExitFailure) + " when it was not saved.")
	vars := flagEnvs(c)
	vars = append(vars,
		envVar{"CRON_GATE_STATE_DIR", "The state dir (journal, pauses) when the config sets no state_dir."},
		envVar{"CRON_GATE_CACHE_DIR", "The config cache's directory; off disables the cache."},
		envVar{"CRON_GATE_TOKEN", "serve: the dashboard's action token (else [serve] token_file, else a random one)."},
		envVar{"GOMAXPROCS", "cron-gate-etcd (a job with [etcd]) runs its Go code on one thread at a time (GOMAXPROCS=1) unless this is set. The command is not affected."},
		envVar{"VISUAL, EDITOR", "edit: the editor (else vi)."},
		envVar{"TZ", "serve: the time zone of the times shown when [serve] time_zone is not set."},
		envVar{"SUDO_USER", "Named as who paused a gate (else the user)."},
		envVar{"CRON_GATE_TRIGGER", "Set by trigger for the gate's line it runs: the line's own cron-gate reads it (the run is recorded as manual, --force applies, the jitter is not waited) and removes it before the command starts. Not for setting by hand."},
		envVar{"CRON_GATE_NAME, CRON_GATE_RUN", "Set for the command: the gate's name and the run's ID (as in the journal)."},
		envVar{"CRON_GATE_BUSY_FD", "Set for the command: a descriptor of a memory file where a withlock in the command that finds its locks busy writes them, for the journal's busy record. withlock takes it out of what its own command inherits."},
		envVar{"CRON_GATE_ALERT_*", "check: set for a [[notify]] command: CRON_GATE_ALERT_KIND (alert or recovery), CRON_GATE_ALERT_GATE, CRON_GATE_ALERT_CONDITION, CRON_GATE_ALERT_TITLE and CRON_GATE_ALERT_BODY (the message), CRON_GATE_ALERT_DETAIL, CRON_GATE_ALERT_SINCE (RFC 3339) and CRON_GATE_ALERT_HOST."},
	)
	environment(&r, vars)
	files(&r, [][2]string{
		{gate.DefaultConfigPath, "The config (cron-gate.toml(5)); a missing default file is an empty config."},
		{gate.DefaultStateDir + "/", "The state dir for root: gates/NAME/journal.jsonl (the journal), the pauses, the watchdog's state. For other users $XDG_STATE_HOME/cron-gate or ~/.local/state/cron-gate."},
		{"/var/cache/cron-gate/", "The config cache for root (mode 0700); for other users $XDG_CACHE_HOME/cron-gate or ~/.cache/cron-gate. Deleting it is always safe."},
		{"~/.cache/withlock/etcd-versions.json", "[etcd]: the members' server versions, shared with withlock (see withlock(1)). Deleting it is always safe."},
	})
	r.sh("EXAMPLES")
	r.text("A crontab (cron starts jobs with PATH=/usr/bin:/bin, so set PATH where the binaries are elsewhere):")
	r.example(crontabExample...)
	r.pp()
	r.text("Pause a gate for two hours with a reason, resume it, see what happened:")
	r.example(
		`cron-gate pause terms --for 2h --reason "glossary migration"`,
		"cron-gate resume terms",
		"cron-gate status            # one line per gate",
		"cron-gate status terms      # one gate in detail; --json for scripts",
	)
	seeAlso(&r, "withlock(1)", "cron-gate.toml(5)", "crontab(5)", "cron(8)")
	return r.String()
}

// tableHeader is how a KeyDoc's table is written in a config file:
// "[gates.NAME]", "[[notify]]" (KeyDoc writes an array's table "[notify]").
func tableHeader(table string) string {
	if table == "" {
		return "Top level"
	}
	return "[" + table + "]"
}

// configExample is docs/config.md's example.
var configExample = []string{
	`state_dir = "/var/lib/cron-gate"   # journal and runtime state`,
	`skip_code = 75                     # exit code of a skipped run, 0..255`,
	``,
	`[gates.terms]`,
	`paused = true`,
	`reason = "until the new glossary lands"`,
	`interval = "10m"                      # for the watchdog: how often it should succeed`,
	`legacy_locks = ["/tmp/terms.lock"]    # skip while an old worker holds this`,
	``,
	`[check]`,
	`alert_after = 2`,
	``,
	`[[notify]]`,
	`type = "command"`,
	`argv = ["bark", "-g", "blog"]`,
}

func configPage(o Options) string {
	var r roff
	r.th("CRON-GATE.TOML", 5, o.Date, "cron-gate "+o.Version, "cron-gate and withlock")
	r.sh("NAME")
	r.raw(`cron-gate.toml \- the config file of cron-gate`)
	r.sh("SYNOPSIS")
	r.raw(italic(gate.DefaultConfigPath))
	r.sh("DESCRIPTION")
	r.text("cron-gate(1) reads its config from --config FILE, else $CRON_GATE_CONFIG, else " + gate.DefaultConfigPath + " (a missing default file is an empty config; a missing file named explicitly is an error). It is TOML. Unknown keys and bad values are errors naming the file, line and key, and a config that cannot be read or is not valid never lets a job run (exit " + strconv.Itoa(runner.ExitFailure) + ").")
	r.pp()
	r.text("Every run reads the config, so a save must never be seen half done: write the new version to a file in the same directory and rename it over the old one (as sed -i and most deployment tools do), or edit it with cron-gate edit, which checks it before replacing it atomically. An editor that saves in place can be seen with a gate's paused = true not written yet.")
	r.sh("KEYS")
	last := "\x00"
	for _, k := range gate.KeyDocs() {
		if k.Table != last {
			r.ss(tableHeader(k.Table))
			last = k.Table
		}
		body := k.Doc
		switch {
		case k.Default != "" && k.Note != "":
			body += ". Default: " + k.Default + " (" + k.Note + ")."
		case k.Default != "":
			body += ". Default: " + k.Default + "."
		case k.Note != "":
			body += ". Default: " + k.Note + "."
		default:
			body += "."
		}
		r.tp(bold(k.Name)+" ("+esc(k.Type)+")", body)
	}
	r.sh("EXAMPLE")
	r.example(configExample...)
	r.sh("FILES")
	r.tp(italic(gate.DefaultConfigPath), "The default config.")
	seeAlso(&r, "cron-gate(1)", "withlock(1)")
	return r.String()
}
