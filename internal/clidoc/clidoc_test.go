package clidoc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

func generate(t *testing.T) map[string]string {
	t.Helper()
	files, err := Files(Options{Version: "0.0.0-test", Date: "2026-12-01"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = string(f.Data)
	}
	return out
}

// tool returns the path of a program the test needs, or skips (tests/all.sh
// fails a skip under CI, where .ci/run installs it).
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install -y %s)", name, pkg)
	}
	return p
}

// missing lists what of c a program's generated files leave out: every
// flag (long and short spelling), subcommand and positional argument of
// the model must be in the man page, and every flag and visible
// subcommand in each completion.
func missing(c *Command, page, bash, zsh, fish string) []string {
	var out []string
	var walk func(c *Command, where string)
	walk = func(c *Command, where string) {
		for _, f := range c.Flags {
			if !strings.Contains(page, bold("--"+f.Long)) {
				out = append(out, "man page: "+where+"--"+f.Long)
			}
			if f.Short != 0 && !strings.Contains(page, bold("-"+string(f.Short))) {
				out = append(out, "man page: "+where+"-"+string(f.Short))
			}
			if !regexp.MustCompile(`[ '(]--` + regexp.QuoteMeta(f.Long) + `[ '|)]`).MatchString(bash) {
				out = append(out, "bash: "+where+"--"+f.Long)
			}
			if !strings.Contains(zsh, "--"+f.Long+"[") && !strings.Contains(zsh, "--"+f.Long+"=[") && !strings.Contains(zsh, ",--"+f.Long+"}") && !strings.Contains(zsh, ",--"+f.Long+"=}") {
				out = append(out, "zsh: "+where+"--"+f.Long)
			}
			if !strings.Contains(fish, " -l "+f.Long+" ") {
				out = append(out, "fish: "+where+"--"+f.Long)
			}
		}
		for _, a := range c.Args {
			if !strings.Contains(page, italic(a.Name)) {
				out = append(out, "man page: "+where+a.Name)
			}
		}
		for _, s := range c.Subs {
			if !s.Hidden {
				if !strings.Contains(page, `.SS "`+esc(c.Name+" "+s.Name)) {
					out = append(out, "man page: subcommand "+s.Name)
				}
				for _, f := range []struct{ name, text string }{{"bash", bash}, {"zsh", zsh}, {"fish", fish}} {
					if !regexp.MustCompile(`\b` + regexp.QuoteMeta(s.Name) + `\b`).MatchString(f.text) {
						out = append(out, f.name+": subcommand "+s.Name)
					}
				}
			}
			walk(s, s.Name+" ")
		}
	}
	walk(c, "")
	return out
}

// Every flag, argument and subcommand of both command lines, as kong
// parses them, is in the man page and in the bash, zsh and fish
// completions; every key of the config table is in cron-gate.toml(5),
// under its table. A flag added to the code is covered without anyone
// editing the pages (they are generated), and this test fails if the
// generator ever drops one.
func TestPagesCoverModel(t *testing.T) {
	files := generate(t)
	wl, cg, err := Models()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Command{wl, cg} {
		for _, m := range missing(c, files["man/man1/"+c.Name+".1"], files["completions/bash/"+c.Name],
			files["completions/zsh/_"+c.Name], files["completions/fish/"+c.Name+".fish"]) {
			t.Errorf("%s: %s is missing", c.Name, m)
		}
	}
	// The check itself catches a flag, a subcommand and an argument
	// that the files lack.
	extra := *cg
	extra.Flags = append(slices.Clone(cg.Flags), Flag{Long: "no-such-flag", Help: "x"})
	extra.Subs = append(slices.Clone(cg.Subs), &Command{Name: "nosuchcommand", Args: []Arg{{Name: "NOSUCHARG"}}})
	got := missing(&extra, files["man/man1/cron-gate.1"], files["completions/bash/cron-gate"],
		files["completions/zsh/_cron-gate"], files["completions/fish/cron-gate.fish"])
	for _, want := range []string{"man page: --no-such-flag", "bash: --no-such-flag", "zsh: --no-such-flag", "fish: --no-such-flag",
		"man page: subcommand nosuchcommand", "bash: subcommand nosuchcommand", "man page: nosuchcommand NOSUCHARG"} {
		if !slices.Contains(got, want) {
			t.Errorf("the coverage check misses %q (it reported %q)", want, got)
		}
	}

	// The keys, table by table.
	page := files["man/man5/cron-gate.toml.5"]
	sections := map[string]string{}
	for _, s := range strings.Split(page, "\n.SS ")[1:] {
		head, body, _ := strings.Cut(s, "\n")
		sections[strings.Trim(head, `"`)] = body
	}
	for _, k := range gate.KeyDocs() {
		h := esc(tableHeader(k.Table))
		if !strings.Contains(sections[h], bold(k.Name)+" (") {
			t.Errorf("cron-gate.toml(5): key %s of table %q is missing", k.Name, h)
		}
	}
}

// Every environment variable the code reads or sets (a string literal
// CRON_GATE_... or WITHLOCK_... in a non-test source file) is named in a
// man page.
func TestPagesNameEnvironment(t *testing.T) {
	files := generate(t)
	pages := files["man/man1/withlock.1"] + files["man/man1/cron-gate.1"] + files["man/man5/cron-gate.toml.5"]
	root := filepath.Join("..", "..")
	name := regexp.MustCompile(`"((?:CRON_GATE|WITHLOCK)_[A-Z0-9_]*[A-Z0-9])[="]`)
	found := map[string]string{}
	for _, dir := range []string{"cmd", "internal", "gate", "pathlock", "slots", "lockfile"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range name.FindAllSubmatch(data, -1) {
				found[string(m[1])] = p
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 10 {
		t.Fatalf("found only %d variables in the source: %v", len(found), found)
	}
	for v, p := range found {
		if !strings.Contains(pages, esc(v)) {
			t.Errorf("%s (used in %s) is not in any man page", v, p)
		}
	}
}

// The pages render without a warning in mandoc's strictest lint (style
// included) and groff's (-ww), which is what `man -l` uses.
func TestManLint(t *testing.T) {
	mandoc := tool(t, "mandoc", "mandoc")
	groff := tool(t, "groff", "groff-base")
	dir := t.TempDir()
	for path, data := range generate(t) {
		if !strings.HasPrefix(path, "man/") {
			continue
		}
		f := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(mandoc, "-Tlint", "-W", "style", f).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("mandoc -Tlint -W style %s: %v\n%s", path, err, out)
		}
		cmd := exec.Command(groff, "-ww", "-z", "-man", f)
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		out, err = cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff -ww -z -man %s: %v\n%s", path, err, out)
		}
	}
}

// gatesConfig is a config with three gates, one of them quoted, one with
// spaces and a comment.
const gatesConfig = `
[gates.terms]
paused = true
[gates."a.b"]
 [ gates.classifier ]   # note
[check]
alert_after = 2
`

// compDir writes the generated completions, a config and a file and a
// directory to complete, and returns it.
func compDir(t *testing.T) string {
	dir := t.TempDir()
	for path, data := range generate(t) {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cfg.toml"), []byte(gatesConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "somefile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "somedir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bashComplete runs the bash completion of words (the last is the word
// being completed) in dir, as bash calls it, and returns the sorted
// candidates.
func bashComplete(t *testing.T, bash, dir string, env []string, words ...string) string {
	t.Helper()
	script := `source "completions/bash/$1"; shift
complete -p "$1" >&2 || exit 3
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
fn=$(complete -p "$1"); fn=${fn#*-F }; fn=${fn%% *}
"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort -u`
	cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", script, "bash", words[0]}, words...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, stderr.Bytes())
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// topWords is what a completion offers as cron-gate's first word with
// cfg.toml (compDir) as the config: the visible subcommands of the model,
// so that a subcommand added to the code needs no edit here, and the
// gates a.b, classifier and terms; sorted.
func topWords(t *testing.T) string {
	t.Helper()
	_, cg, err := Models()
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"a.b", "classifier", "terms"}
	for _, s := range cg.Subs {
		if !s.Hidden {
			words = append(words, s.Name)
		}
	}
	slices.Sort(words)
	return strings.Join(words, " ")
}

// The bash completions load (complete -p names the function) and offer
// the flags, their values, the subcommands, the gates of the config and,
// after "--", commands.
func TestBashCompletion(t *testing.T) {
	bash := tool(t, "bash", "bash")
	dir := compDir(t)
	for _, c := range []struct {
		env   []string
		words []string
		want  string
	}{
		{nil, []string{"withlock", "--pa"}, "--password-file --paths --paths-from"},
		{nil, []string{"withlock", "--backend", ""}, "etcd local"},
		{nil, []string{"withlock", "--backend", "=", "e"}, "etcd"},
		{nil, []string{"withlock", "--on-coordinator-down", ""}, "fail skip"},
		{nil, []string{"withlock", "--lock-dir", "some"}, "somedir"},
		{nil, []string{"withlock", "--paths-from", "some"}, "somedir somefile"},
		{nil, []string{"withlock", "--wait", ""}, ""},
		{nil, []string{"withlock", "-p", "a", "--wait", "1s", ""}, "--"},
		{nil, []string{"withlock", "-p", "a", "--", "tru"}, "true truncate"},
		{nil, []string{"withlock", "w"}, "who"},
		{nil, []string{"withlock", ""}, "-- who"},
		{nil, []string{"withlock", "-p", "a", "w"}, ""},
		{nil, []string{"withlock", "who", "--"}, whoFlags(t)},
		{nil, []string{"withlock", "who", "-p", "a", "--"}, whoFlags(t)},
		{nil, []string{"withlock", "who", "--backend", ""}, "etcd local"},
		{nil, []string{"withlock", "who", "--lock-dir", "some"}, "somedir"},
		{nil, []string{"cron-gate", "pa"}, "pause"},
		{nil, []string{"cron-gate", "--config", "cfg.toml", ""}, topWords(t)},
		{nil, []string{"cron-gate", "--config", "=", "cfg.toml", "resume", ""}, "a.b classifier terms"},
		{nil, []string{"cron-gate", "--config=cfg.toml", "status", "t"}, "terms"},
		{[]string{"CRON_GATE_CONFIG=cfg.toml"}, []string{"cron-gate", "pause", "c"}, "classifier"},
		{[]string{"CRON_GATE_CONFIG=cfg.toml"}, []string{"cron-gate", "pause", "terms", ""}, ""},
		{nil, []string{"cron-gate", "--config", "cfg.toml", "terms", "--ti"}, "--timeout"},
		{nil, []string{"cron-gate", "--config", "cfg.toml", "terms", "--once-per", ""}, "1d 1h 1w slot"},
		{nil, []string{"cron-gate", "--config", "cfg.toml", "terms", ""}, "--"},
		{nil, []string{"cron-gate", "status", "--"}, "--config --help --json --output --quiet --verbose --version"},
		{nil, []string{"cron-gate", "check", "--metrics-file", "somef"}, "somefile"},
		{nil, []string{"cron-gate", "terms", "--", "tru"}, "true truncate"},
		{[]string{"CRON_GATE_CONFIG=/nonexistent"}, []string{"cron-gate", "resume", ""}, ""},
	} {
		if got := bashComplete(t, bash, dir, c.env, c.words...); got != c.want {
			t.Errorf("bash completion of %q (%v): %q, want %q", c.words, c.env, got, c.want)
		}
	}
}

// The fish completions offer the same (fish's own `complete -C`).
func TestFishCompletion(t *testing.T) {
	fish := tool(t, "fish", "fish")
	dir := compDir(t)
	for _, c := range []struct{ prog, line, want string }{
		{"withlock", "withlock --pa", "--password-file --paths --paths-from"},
		{"withlock", "withlock --backend ", "etcd local"},
		{"withlock", "withlock --lock-dir some", "somedir/"},
		{"withlock", "withlock -p a -- tru", "true truncate"},
		{"withlock", "withlock w", "who"},
		{"withlock", "withlock -p a w", ""},
		{"withlock", "withlock who --", whoFlags(t)},
		{"withlock", "withlock who -p a --", whoFlags(t)},
		{"withlock", "withlock who --backend ", "etcd local"},
		{"cron-gate", "cron-gate pa", "pause"},
		{"cron-gate", "cron-gate --config cfg.toml ", topWords(t)},
		{"cron-gate", "cron-gate --config=cfg.toml resume ", "a.b classifier terms"},
		{"cron-gate", "cron-gate --config cfg.toml pause terms ", ""},
		{"cron-gate", "cron-gate --config cfg.toml terms --ti", "--timeout"},
		{"cron-gate", "cron-gate --config cfg.toml terms --once-per ", "1d 1h 1w slot"},
		{"cron-gate", "cron-gate status --", "--config --help --json --output --quiet --verbose --version"},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", "source completions/fish/"+c.prog+".fish; complete -C "+fishQuote(c.line))
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fish completion of %q: %v\n%s", c.line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		if g := strings.Join(slices.Compact(got), " "); g != c.want {
			t.Errorf("fish completion of %q: %q, want %q", c.line, g, c.want)
		}
	}
}

// The zsh completions parse and register with compinit for their
// programs.
func TestZshCompletionLoads(t *testing.T) {
	zsh := tool(t, "zsh", "zsh")
	dir := compDir(t)
	for _, f := range []string{"_withlock", "_cron-gate"} {
		if out, err := exec.Command(zsh, "-n", filepath.Join(dir, "completions/zsh", f)).CombinedOutput(); err != nil {
			t.Errorf("zsh -n %s: %v\n%s", f, err, out)
		}
	}
	cmd := exec.Command(zsh, "-f", "-c", `fpath=(completions/zsh $fpath); autoload -Uz compinit; compinit -u -D; print -r -- $_comps[withlock] $_comps[cron-gate]`)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_withlock _cron-gate" {
		t.Errorf("compinit: %v, %q; want the two functions registered", err, out)
	}
}

// zshCapture runs in zsh -f: it starts an interactive zsh in a pty
// (zsh/zpty) with the completions of the current directory and PATH $2,
// types $1 and a TAB, and prints every candidate completion adds, each
// after "<c>" (compadd wrapped, as Valodim/zsh-capture-completion does).
// TAB is bound to a widget that completes, then prints a mark; nothing
// more is typed until the mark is read, so the completion never runs
// with typeahead pending (under load it then offered nothing, once).
const zshCapture = `zmodload zsh/zpty || exit 3
zpty z "$3 -f -i"
zpty -w z "PS1='' RPS1=''; PATH=$2; fpath=($PWD/completions/zsh \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'compadd() {
	if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
	local -a hits; builtin compadd -O hits "$@"; local r=$?
	(( $#hits )) && print -r -l -- "<c>"${^hits}
	builtin compadd "$@"; return r
}'
zpty -w z 'tabmark() { zle expand-or-complete; print -n "__CD""ONE__"; }; zle -N tabmark; bindkey "^I" tabmark'
zpty -w z "print __RE''ADY__"
zpty -r z out '*__READY__*' || exit 4
zpty -w -n z "$1"$'\t'
zpty -r z out '*__CDONE__*' || exit 6
zpty -w z $'\C-u'"print __E''ND__"
zpty -r z end '*__END__*' || exit 5
print -r -- "$out"
zpty -d z`

// zshComplete returns the sorted candidates zsh's completion offers for
// line, in dir, with dir/bin as PATH (so that no command of the host is
// offered).
func zshComplete(t *testing.T, zsh, dir, line string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, zsh, "-f", "-c", zshCapture, "zsh", line, filepath.Join(dir, "bin"), zsh)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TERM=dumb"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zsh completion of %q: %v\n%s", line, err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if _, w, ok := strings.Cut(strings.TrimRight(l, "\r"), "<c>"); ok {
			got = append(got, w)
		}
	}
	slices.Sort(got)
	return slices.Compact(got)
}

// The zsh completions offer withlock's flags and, as its first word
// only, who with who's own flags; after "--", commands (tests the
// completion as zsh runs it, in a pty).
func TestZshCompletion(t *testing.T) {
	zsh := tool(t, "zsh", "zsh")
	dir := compDir(t)
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "truecmd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		want string // the candidates, sorted; with has or not: one of them
		has  bool   // want is among the candidates
		not  bool   // want is not among the candidates
	}{
		{"withlock --pa", "--password-file --paths --paths-from", false, false},
		{"withlock --backend ", "etcd local", false, false},
		{"withlock -p a -- truec", "truecmd", false, false},
		{"withlock w", "who", true, false},
		{"withlock who --", whoFlags(t), false, false},
		{"withlock who -p a --", whoFlags(t), false, false},
		{"withlock who --backend ", "etcd local", false, false},
		{"withlock -p a wh", "who", false, true},
		{"withlock -- wh", "who", false, true},
	} {
		got := zshComplete(t, zsh, dir, c.line)
		var ok bool
		switch {
		case c.has:
			ok = slices.Contains(got, c.want)
		case c.not:
			ok = !slices.Contains(got, c.want)
		default:
			ok = strings.Join(got, " ") == c.want
		}
		if !ok {
			t.Errorf("zsh completion of %q: %q; want %q (among them: %v, not among them: %v)", c.line, got, c.want, c.has, c.not)
		}
	}
}

func TestEsc(t *testing.T) {
	for in, want := range map[string]string{
		"--paths-from and -p": `\-\-paths\-from and \-p`,
		"per-path, a - b":     `per-path, a \- b`,
		"C:\\x":               `C:\ex`,
		"a — b…":              `a \(em b...`,
		"héllo":               `h\[u00E9]llo`,
		"`status NAME`":       `\fBstatus NAME\fR`,
		"(--x) [-y] '--z'":    `(\-\-x) [\-y] '\-\-z'`,
		"--":                  `\-\-`,
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
	var r roff
	r.text(".TH not a macro")
	r.text("'also not")
	if got := r.String(); got != `\&.TH not a macro`+"\n"+`\&'also not`+"\n" {
		t.Errorf("leading control characters not guarded: %q", got)
	}
}

// esc never lets text become a roff request or a stray escape: no
// newline or control character survives, and every backslash starts one
// of the escapes it writes.
func FuzzEsc(f *testing.F) {
	for _, s := range []string{"--paths", "a\\b", ".TH x", "\x00\x1b[31m", "é—…", "`a`"} {
		f.Add(s)
	}
	escape := regexp.MustCompile(`\\(e|-|&|\(em|\(en|\[u[0-9A-F]{4,6}\]|f[BR])`)
	f.Fuzz(func(t *testing.T, s string) {
		out := esc(s)
		for _, c := range out {
			if c < 0x20 || c == 0x7f || c >= 0x80 {
				t.Fatalf("esc(%q) = %q has character %U", s, out, c)
			}
		}
		if rest := escape.ReplaceAllString(out, ""); strings.Contains(rest, `\`) {
			t.Fatalf("esc(%q) = %q has a backslash that is not one of its escapes", s, out)
		}
	})
}
