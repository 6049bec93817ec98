//go:build pkg

package pkg

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// dpkg runs dpkg, waiting (up to a deadline) while another process holds
// dpkg's lock, as apt would.
func dpkg(t *testing.T, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		cmd := exec.Command("dpkg", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err == nil {
			return string(out)
		}
		if strings.Contains(string(out), "lock") && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			continue
		}
		t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// pkgStatus is dpkg's status of a package, cron-gate unless named ("ii ", "rc ", ...), "" when
// dpkg does not know it.
func pkgStatus(name ...string) string {
	pkg := "cron-gate"
	if len(name) > 0 {
		pkg = name[0]
	}
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// asNobody returns the command line that runs argv as uid/gid 65534 in a
// cron-like environment: only HOME, LOGNAME, SHELL and PATH (cron's
// default, /usr/bin:/bin), as a user crontab's job gets.
func asNobody(home string, argv ...string) []string {
	return append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		"env", "-i", "HOME=" + home, "LOGNAME=nobody", "SHELL=/bin/sh", "PATH=/usr/bin:/bin"}, argv...)
}

// The Debian packages, installed with dpkg -i (cron-gate-etcd alone
// refused for its dependency on cron-gate): the four
// binaries are on cron's default PATH and print their version and commit;
// man finds every page; bash-completion, zsh and fish load the
// completions; the demo and crontab-style calls (run, lock, skip 75,
// pause, journal, status) work as a user whose crontab has no PATH line;
// dpkg -r leaves only the conffile, dpkg -P nothing. It runs only in the
// private mount namespace (private_test.go), where /usr, /etc and /var
// are overlays: the host is neither changed nor read for what is
// installed there (a cron-gate package on the host is purged inside the
// overlay first).
func TestDebInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installing a package needs root")
	}
	if !inPrivate() {
		t.Skip("no private mount namespace (unshare, util-linux): the test would install into the host")
	}
	for _, p := range [][2]string{{"dpkg", "dpkg"}, {"man", "man-db"}, {"setpriv", "util-linux"}, {"python3", "python3"},
		{"flock", "util-linux"}, {"zsh", "zsh"}, {"fish", "fish"}} {
		need(t, p[0], p[1])
	}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil {
		t.Skip("bash-completion is not installed (apt-get install -y bash-completion)")
	}
	dir := release(t)
	deb := filepath.Join(dir, "cron-gate_"+version(t)+"_amd64.deb")
	edeb := filepath.Join(dir, "cron-gate-etcd_"+version(t)+"_amd64.deb")
	files := append(debFiles(t, deb), debFiles(t, edeb)...)
	// purge purges both packages, the etcd one first (it depends on the
	// other), where dpkg knows them.
	purge := func() {
		for _, p := range []string{"cron-gate-etcd", "cron-gate"} {
			if s := pkgStatus(p); s != "" && !strings.HasPrefix(s, "un") {
				dpkg(t, "--purge", p)
			}
		}
	}
	// What the host has installed is gone from the overlay, so that the
	// checks below see only these packages' doing.
	purge()
	for _, f := range append(files, "/etc/cron-gate", rootCache) {
		if err := os.RemoveAll(f); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(purge)

	// The etcd package alone is refused: it depends on the base one.
	if code, out := exitCode(t, "", nil, "dpkg", "--install", edeb); code == 0 || pkgStatus("cron-gate-etcd") == "ii " {
		t.Fatalf("dpkg -i cron-gate-etcd without cron-gate: exit %d, status %q\n%s", code, pkgStatus("cron-gate-etcd"), out)
	}
	dpkg(t, "--install", deb, edeb)
	if s, e := pkgStatus(), pkgStatus("cron-gate-etcd"); s != "ii " || e != "ii " {
		t.Fatalf("after dpkg -i the statuses are %q and %q, want ii", s, e)
	}
	cronEnv := []string{"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"}

	t.Run("binaries", func(t *testing.T) {
		for _, b := range binaries {
			p := strings.TrimSpace(run(t, "", cronEnv, "/bin/sh", "-c", "command -v "+b))
			if p != "/usr/bin/"+b {
				t.Errorf("%s on cron's PATH: %q, want /usr/bin/%s", b, p, b)
			}
			prog := "withlock"
			if strings.HasPrefix(b, "cron-gate") {
				prog = "cron-gate"
			}
			if b == "withlock-etcd" {
				prog = b
			}
			if out := run(t, "", cronEnv, b, "--version"); !versionLine(t, prog).MatchString(out) {
				t.Errorf("%s --version: %q, want %s", b, out, versionLine(t, prog))
			}
		}
	})

	t.Run("man", func(t *testing.T) {
		for page, want := range map[string]string{
			"withlock": "/usr/share/man/man1/withlock.1.gz", "cron-gate": "/usr/share/man/man1/cron-gate.1.gz",
			// The companions' pages are links; man-db's -w prints the
			// page they lead to.
			"withlock-etcd": "/usr/share/man/man1/withlock.1.gz", "cron-gate-etcd": "/usr/share/man/man1/cron-gate.1.gz",
			"cron-gate.toml": "/usr/share/man/man5/cron-gate.toml.5.gz",
		} {
			if got := strings.TrimSpace(run(t, "", nil, "man", "-w", page)); got != want {
				t.Errorf("man -w %s: %q, want %q", page, got, want)
			}
		}
		env := append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LANG=C.UTF-8")
		for page, want := range map[string]string{
			"withlock":       "withlock - run a command while holding per-path flock locks",
			"withlock-etcd":  "--paths-from",
			"cron-gate":      "cron-gate [options] pause NAME",
			"cron-gate.toml": "log_max_bytes (integer, 4096 to 1073741824)",
		} {
			cmd := exec.Command("man", page)
			cmd.Env = env
			out, err := cmd.Output() // stderr: man's warnings, which must be none
			if err != nil || !strings.Contains(string(out), want) {
				t.Errorf("man %s: %v; the page lacks %q:\n%s", page, err, want, out)
			}
		}
	})

	t.Run("completions", func(t *testing.T) {
		// bash-completion's loader finds the completion by the program's
		// name, and it completes.
		script := `source /usr/share/bash-completion/bash_completion
__load_completion cron-gate && __load_completion withlock || exit 3
complete -p cron-gate withlock
COMP_WORDS=(cron-gate pa); COMP_CWORD=1; _cron_gate; echo "cron-gate pa: ${COMPREPLY[*]}"
COMP_WORDS=(withlock --back); COMP_CWORD=1; _withlock; echo "withlock --back: ${COMPREPLY[*]}"`
		out := run(t, "", nil, "bash", "--norc", "--noprofile", "-c", script)
		for _, want := range []string{"complete -F _cron_gate cron-gate\n", "complete -F _withlock withlock\n", "cron-gate pa: pause\n", "withlock --back: --backend\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("bash completion: no %q in\n%s", want, out)
			}
		}
		// zsh: compinit registers both from the vendor directory.
		out = run(t, "", []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, -1, "zsh-home")}, "zsh", "-f", "-c",
			`autoload -Uz compinit; compinit -u -D; print -r -- $_comps[withlock] $_comps[cron-gate]`)
		if strings.TrimSpace(out) != "_withlock _cron-gate" {
			t.Errorf("zsh compinit: %q, want _withlock _cron-gate", out)
		}
		// fish loads it from vendor_completions.d by itself.
		out = run(t, "", []string{"PATH=/usr/bin:/bin", "HOME=" + mkdir(t, -1, "fish-home")}, "fish", "-c", "complete -C 'cron-gate sta'")
		if !strings.HasPrefix(out, "status\t") {
			t.Errorf("fish: complete -C 'cron-gate sta': %q, want status", out)
		}
	})

	t.Run("crontab", func(t *testing.T) {
		// A user's crontab line with no PATH line: cron's default PATH.
		home := mkdir(t, 65534, "nobody-home")
		line := `cron-gate pkgtest -- withlock --lock-dir $HOME/locks --paths $HOME/post.md -- sh -c 'echo ran >>$HOME/ran'`
		cron := func(want int, line string) string {
			t.Helper()
			argv := asNobody(home, "/bin/sh", "-c", line)
			code, out := exitCode(t, "/", nil, argv[0], argv[1:]...)
			if code != want {
				t.Fatalf("%s: exit %d, want %d\n%s", line, code, want, out)
			}
			return out
		}
		if out := cron(0, line); out != "" {
			t.Errorf("a successful run printed %q (cron would mail it)", out)
		}
		cron(0, line) // the second run takes the lean binary's cached path
		if b, _ := os.ReadFile(filepath.Join(home, "ran")); string(b) != "ran\nran\n" {
			t.Errorf("the command ran %q, want twice", b)
		}
		// Busy: the same path locked around it, exit 75, silent under cron
		// (stderr is not a terminal), the reason with -v.
		busy := `withlock --lock-dir $HOME/locks --paths $HOME/post.md -- `
		if out := cron(75, busy+line); out != "" {
			t.Errorf("a busy lock under cron: %q, want nothing (cron would mail it)", out)
		}
		if out := cron(75, busy+strings.Replace(line, "-- withlock --lock-dir", "-- withlock -v --lock-dir", 1)); !strings.Contains(out, "busy") {
			t.Errorf("a busy lock, -v: %q, want a reason naming it busy", out)
		}
		// Paused: 75 and journaled, silent under cron, the reason with -v;
		// resumed: runs.
		cron(0, "cron-gate -q pause pkgtest --for 1h --reason pkg-test")
		if out := cron(75, line); out != "" {
			t.Errorf("a paused gate under cron: %q, want nothing", out)
		}
		if out := cron(75, strings.Replace(line, "cron-gate pkgtest", "cron-gate -v pkgtest", 1)); !strings.Contains(out, "paused") {
			t.Errorf("a paused gate, -v: %q, want a reason naming the pause", out)
		}
		cron(0, "cron-gate -q resume pkgtest")
		cron(0, line)
		var st struct {
			StateDir string `json:"state_dir"`
			Gates    []struct {
				Name      string         `json:"name"`
				Runs      int            `json:"runs"`
				Successes int            `json:"successes"`
				Skips     map[string]int `json:"skips"`
			} `json:"gates"`
		}
		if err := json.Unmarshal([]byte(cron(0, "cron-gate status --json")), &st); err != nil {
			t.Fatal(err)
		}
		if st.StateDir != home+"/.local/state/cron-gate" || len(st.Gates) != 1 || st.Gates[0].Name != "pkgtest" {
			t.Fatalf("status --json: %+v; want pkgtest in %s/.local/state/cron-gate", st, home)
		}
		g := st.Gates[0]
		skips := 0
		for _, n := range g.Skips {
			skips += n
		}
		// Runs: two, the two busy ones (the wrapped withlock's 75, silent
		// and with -v), the third; two skips by the pause.
		if g.Successes != 3 || g.Skips["busy"] != 2 || g.Skips["paused"] != 2 || skips != 4 {
			t.Errorf("status of pkgtest: %+v; want 3 successes and 4 skips (busy 2, paused 2)", g)
		}
		j, err := os.ReadFile(filepath.Join(st.StateDir, "gates/pkgtest/journal.jsonl"))
		if err != nil || strings.Count(string(j), `"event":"end"`) < 4 {
			t.Errorf("journal: %v\n%s", err, j)
		}
	})

	t.Run("demo", func(t *testing.T) {
		// examples/blog-workers/run.py with the installed binaries, as a
		// user: the same table and checks as bash examples/run.sh.
		home := mkdir(t, 65534, "demo-home")
		ex := mkdir(t, 65534, "demo-home", "blog-workers")
		// Not filepath.Join: it would drop the "/." and cp would copy the
		// directory into ex instead of its contents.
		run(t, "", nil, "cp", "-r", root+"/examples/blog-workers/.", ex)
		run(t, "", nil, "chown", "-R", "65534:65534", ex)
		argv := asNobody(home, "python3", filepath.Join(ex, "run.py"), "--bin", "/usr/bin", "--hours", "5", "--workdir", filepath.Join(home, "runs"))
		code, out := exitCode(t, ex, nil, argv[0], argv[1:]...)
		if code != 0 {
			t.Fatalf("the demo with the installed binaries: exit %d\n%s", code, out)
		}
		if !strings.Contains(out, "ok      (c) cron-gate + withlock loses no write") {
			t.Errorf("the demo's checks:\n%s", out)
		}
	})

	// The docs the man pages name are installed (issue 32 item 10).
	for _, d := range []string{"withlock.md", "cron-gate.md", "config.md", "exit-codes.md"} {
		if _, err := os.Stat("/usr/share/doc/cron-gate/" + d + ".gz"); err != nil {
			t.Errorf("the man pages name %s: %v", d, err)
		}
	}
	// A run as root fills root's config cache, which purge removes.
	scratch := mkdir(t, -1, "root-run")
	run(t, "", append(cronEnv, "CRON_GATE_STATE_DIR="+scratch), "cron-gate", "pkgtest-root", "--", "true")
	run(t, "", append(cronEnv, "CRON_GATE_STATE_DIR="+scratch), "cron-gate", "pkgtest-root", "--", "true")
	if _, err := os.Stat(rootCache); err != nil {
		t.Errorf("root's config cache after two runs: %v", err)
	}

	// dpkg -r: only the conffile stays; dpkg -P: nothing, root's config
	// cache included (postrm).
	dpkg(t, "--remove", "cron-gate-etcd", "cron-gate")
	if s, e := pkgStatus(), pkgStatus("cron-gate-etcd"); s != "rc " || (e != "" && !strings.HasPrefix(e, "un")) {
		t.Errorf("after dpkg -r the statuses are %q and %q, want rc (config files) and gone", s, e)
	}
	for _, f := range files {
		_, err := os.Lstat(f)
		if conf := f == "/etc/cron-gate/config.toml"; conf != (err == nil) {
			t.Errorf("after dpkg -r, %s: %v (only the conffile stays)", f, err)
		}
	}
	dpkg(t, "--purge", "cron-gate")
	if s := pkgStatus(); s != "" && !strings.HasPrefix(s, "un") {
		t.Errorf("after dpkg -P the status is %q", s)
	}
	for _, f := range append(files, "/etc/cron-gate", rootCache) {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("after dpkg -P, %s is still there", f)
		}
	}
}

// rootCache is root's config cache (gate/configcache.go), which the
// package's postrm removes on purge.
const rootCache = "/var/cache/cron-gate"

// readmeSection returns the text of README.md's section titled title.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", title)
	}
	s, _, _ = strings.Cut(s, "\n## ")
	return s
}

// codeBlocks returns the fenced code blocks of markdown text.
func codeBlocks(s string) []string {
	var out []string
	parts := strings.Split(s, "```")
	for i := 1; i < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n")
		out = append(out, body)
	}
	return out
}

// The README's one install command puts the binaries where its
// crontab's PATH line finds them, and every line of its "Crontab
// examples" runs there under cron's conditions (sh -c, a bare
// environment with the crontab's variables): silently and with exit 0,
// with the workers replaced by true and /srv/blog and /tmp by a scratch
// tree. make uninstall then removes every file install put, and nothing
// else.
func TestReadmeInstall(t *testing.T) {
	need(t, "make", "make")
	// The install command: "sudo make install" and its variables.
	var install []string
	for _, l := range strings.Split(readmeSection(t, "Install"), "\n") {
		if i := strings.Index(l, "sudo make install"); i >= 0 && install == nil {
			install = strings.Fields(strings.TrimSpace(strings.SplitN(l[i+len("sudo "):], "#", 2)[0]))
		}
	}
	if install == nil {
		t.Fatal("README's Install section has no `sudo make install` command")
	}
	prefix := "/usr/local" // the Makefile's default
	for _, a := range install {
		if v, ok := strings.CutPrefix(a, "PREFIX="); ok {
			prefix = v
		}
	}
	dest := mkdir(t, -1, "destdir")
	keep := filepath.Join(dest, prefix, "bin", "not-ours")
	write(t, keep, "#!/bin/sh\n", 0o755)
	build := mkdir(t, -1, "readme-build")
	run(t, root, nil, install[0], append(install[1:], "DESTDIR="+dest, "BUILD="+build)...)

	// The crontab: its variables and lines.
	var crontab string
	for _, b := range codeBlocks(readmeSection(t, "Crontab examples")) {
		if strings.Contains(b, "PATH=") {
			crontab = b
		}
	}
	if crontab == "" {
		t.Fatal("README's Crontab examples have no crontab with a PATH line")
	}
	scratch := mkdir(t, -1, "scratch")
	for _, f := range []string{"srv/blog/ko/a.md", "srv/blog/en/a.md"} {
		write(t, filepath.Join(scratch, f), "post\n", 0o644)
	}
	write(t, filepath.Join(scratch, "srv/blog/queue/terms.txt"), filepath.Join(scratch, "srv/blog/ko/a.md")+"\n", 0o644)
	rewrite := strings.NewReplacer("/srv/blog/", scratch+"/srv/blog/", "/tmp/", scratch+"/tmp/")
	worker := regexp.MustCompile(`python3 \S+\.py|` + regexp.QuoteMeta(scratch) + `/srv/blog/bin/\S+`)
	jitter := regexp.MustCompile(`--jitter \S+ `)
	queue := regexp.MustCompile(`python3 candidates\.py \S+`)
	schedule := regexp.MustCompile(`^(\S+\s+){5}`)
	env := []string{"HOME=" + scratch, "LOGNAME=root", "SHELL=/bin/sh",
		// Scratch state, lock dir and config (whose watchdog reads this
		// very crontab): these lines may stand in a crontab too.
		"CRON_GATE_STATE_DIR=" + scratch + "/state", "CRON_GATE_CACHE_DIR=off", "WITHLOCK_LOCK_DIR=" + scratch + "/locks",
		"CRON_GATE_CONFIG=" + scratch + "/config.toml"}
	write(t, filepath.Join(scratch, "config.toml"), fmt.Sprintf("[check]\ncrontab_command = [\"cat\", %q]\n", scratch+"/crontab"), 0o644)
	write(t, filepath.Join(scratch, "crontab"), rewrite.Replace(crontab), 0o644)
	if err := os.MkdirAll(filepath.Join(scratch, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sawPath := false
	sc := bufio.NewScanner(strings.NewReader(crontab))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case regexp.MustCompile(`^[A-Z_]+=`).MatchString(l):
			name, val, _ := strings.Cut(l, "=")
			if name == "PATH" {
				sawPath = true
				// Each directory as installed under DESTDIR, then the
				// system's for sh, true and the like; the binaries must
				// resolve to the installed ones.
				var dirs []string
				for _, d := range strings.Split(val, ":") {
					dirs = append(dirs, dest+d)
				}
				if !slices.Contains(strings.Split(val, ":"), prefix+"/bin") {
					t.Errorf("README's crontab PATH %s lacks %s/bin, where its install command puts the binaries", val, prefix)
				}
				val = strings.Join(dirs, ":") + ":/usr/bin:/bin"
			}
			env = append(env, name+"="+val)
		default:
			if !schedule.MatchString(l) {
				t.Fatalf("README crontab line %q has no schedule", l)
			}
			l = rewrite.Replace(schedule.ReplaceAllString(l, ""))
			// A queue printer (--first-of's candidates) prints one set;
			// a jitter's wait (up to its length, jitter.txtar tests it)
			// is left out, and a worker program is true.
			l = queue.ReplaceAllString(l, "echo "+scratch+"/srv/blog/ko/queued.md")
			l = jitter.ReplaceAllString(l, "")
			lines = append(lines, worker.ReplaceAllString(l, "true"))
		}
	}
	if !sawPath || len(lines) < 3 {
		t.Fatalf("README's crontab: PATH line %v, %d lines", sawPath, len(lines))
	}
	for _, b := range []string{"withlock", "cron-gate"} {
		want := dest + prefix + "/bin/" + b
		if got := strings.TrimSpace(run(t, "/", env, "/bin/sh", "-c", "command -v "+b)); got != want {
			t.Errorf("%s resolves to %q under the crontab's PATH, want %q", b, got, want)
		}
	}
	for _, l := range lines {
		code, out := exitCode(t, "/", env, "/bin/sh", "-c", l)
		if code != 0 || out != "" {
			t.Errorf("crontab line %q: exit %d, output %q; want 0 and nothing (cron mails any output)", l, code, out)
		}
	}

	run(t, root, nil, install[0], append([]string{"uninstall"}, append(install[2:], "DESTDIR="+dest)...)...)
	var left []string
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if !slices.Equal(left, []string{keep}) {
		t.Errorf("after make uninstall: %q; want only %s, which install did not put", left, keep)
	}
}
