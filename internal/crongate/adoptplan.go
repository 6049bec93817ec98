//go:build linux

package crongate

// What `cron-gate adopt` proposes for a crontab (docs/cron-gate.md,
// "Adopting a crontab"): pure functions of the crontab's text, tested
// without cron (adopt_test.go, FuzzAdopt). The command around them is
// adopt.go.
//
// The one rule for the command: a job line `SCHED COMMAND` becomes
// `SCHED cron-gate NAME -- SHELL -c 'COMMAND'`, SHELL being the one cron
// runs the line with (the crontab's last SHELL= line above it, else
// /bin/sh). cron gives the whole command to `SHELL -c`, so the original
// text reaches that same shell as its -c argument, byte for byte: pipes,
// redirections, `cd x && y`, variables and globs mean what they meant.
// The text is quoted in single quotes, a ' written as '\''; cron's own
// processing of the line (\% and \\ unescaped, an unescaped % cutting
// the command) works on backslash pairs, and the quoting adds a
// backslash only before a ', so it commutes with the quoting: the shell
// gets the text cron would have given it (TestAdoptQuotingProperty runs
// both through /bin/sh).

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/cronexpr"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/watch"
)

// adoptChange is one job line adopt wraps, or leaves alone and why.
type adoptChange struct {
	line     int    // 1-based
	old, new string // the line without its newline; new "" when left alone
	gate     string
	schedule string
	reason   string // why it is left alone
	path     string // the PATH cron runs the line with
}

// adoptPlan is adopt's proposal for one crontab.
type adoptPlan struct {
	lines   []string // the crontab's lines, without their newlines
	final   bool     // the text ends with a newline
	wrapped []adoptChange
	alone   []adoptChange
}

// text is the crontab with every wrapped line replaced.
func (p *adoptPlan) text() string {
	out := append([]string(nil), p.lines...)
	for _, c := range p.wrapped {
		out[c.line-1] = c.new
	}
	s := strings.Join(out, "\n")
	if p.final {
		s += "\n"
	}
	return s
}

// planAdopt reads a crontab (system: a user field after the schedule)
// with watch.ReadCrontabEntries and proposes a gate for every job line
// not already under cron-gate. taken tells whether a name is already a
// gate elsewhere (the config's); names are --name's overrides by line.
// An error is a crontab cron ignores, or an override that cannot be used.
func planAdopt(data []byte, source string, system bool, userExists func(string) bool, taken func(string) bool, names map[int]string) (*adoptPlan, error) {
	entries, fileErr := watch.ReadCrontabEntries(data, source, system, userExists)
	if fileErr != "" {
		return nil, fmt.Errorf("%s: cron ignores this crontab: %s; fix it first", source, fileErr)
	}
	p := &adoptPlan{final: len(data) > 0 && data[len(data)-1] == '\n'}
	text := string(data)
	if p.final {
		text = text[:len(text)-1]
	}
	p.lines = strings.Split(text, "\n")
	used := map[string]bool{}
	byLine := map[int]watch.CrontabJob{}
	for _, e := range entries {
		byLine[e.Line] = e
		if e.Gate != "" {
			used[e.Gate] = true
		}
	}
	for n, name := range names {
		e, ok := byLine[n]
		switch {
		case !ok:
			return nil, usageError{fmt.Sprintf("--name %d=%s: line %d of %s is not a job line", n, name, n, source)}
		case e.Gate != "":
			return nil, usageError{fmt.Sprintf("--name %d=%s: line %d already runs through gate %s", n, name, n, e.Gate)}
		case used[name]:
			return nil, usageError{fmt.Sprintf("--name %d=%s: gate %s is already in the crontab", n, name, name)}
		}
		if err := gate.CheckName(name); err != nil {
			return nil, usageError{fmt.Sprintf("--name %d=%s: %v", n, name, err)}
		}
		used[name] = true
	}
	for _, e := range entries {
		if e.Gate != "" {
			continue // already gated: a second run changes nothing
		}
		c := adoptChange{line: e.Line, old: p.lines[e.Line-1], schedule: e.Schedule,
			path: envOf(e.Env, "PATH", "/usr/bin:/bin")} // cron's default PATH
		shell := envOf(e.Env, "SHELL", "/bin/sh")
		switch {
		case strings.HasPrefix(e.Schedule, "@reboot"):
			c.reason = "an @reboot job runs once per boot, which no interval describes; wrap it by hand if it needs a gate"
		case hasUnescapedPercent(e.Text):
			c.reason = "the command has a %, which cron turns into the command's input; wrap it by hand"
		case strings.IndexByte(e.Text, 0) >= 0:
			c.reason = "the command has a NUL byte"
		case strings.TrimSpace(e.Text) == "":
			c.reason = "the line has no command"
		case !strings.HasPrefix(shell, "/"):
			c.reason = "SHELL=" + strconv.Quote(shell) + " is not an absolute path"
		}
		if c.reason != "" {
			if n, ok := names[e.Line]; ok {
				return nil, usageError{fmt.Sprintf("--name %d=%s: line %d is left alone: %s", e.Line, n, e.Line, c.reason)}
			}
			p.alone = append(p.alone, c)
			continue
		}
		c.gate = names[e.Line]
		if c.gate == "" {
			c.gate = uniqueName(deriveName(e.Text), func(s string) bool { return used[s] || taken(s) })
			used[c.gate] = true
		}
		// Blanks before the command stay before cron-gate, keeping the
		// columns: the shell ignores them either way.
		cmd := strings.TrimLeft(e.Text, " \t")
		c.new = c.old[:len(c.old)-len(cmd)] + adoptCommand(c.gate, shell, cmd)
		// The new line must be one cron reads as a job of that gate.
		again, fe := watch.ReadCrontabEntries([]byte(c.new+"\n"), source, system, func(string) bool { return true })
		if fe != "" || len(again) != 1 || again[0].Gate != c.gate {
			c.reason = "after wrapping, cron would not read the line"
			if fe != "" {
				_, why, _ := strings.Cut(fe, ": ")
				c.reason += " (" + why + ")"
			}
			c.new = ""
			p.alone = append(p.alone, c)
			continue
		}
		p.wrapped = append(p.wrapped, c)
	}
	return p, nil
}

// adoptCommand is the command of an adopted line.
func adoptCommand(name, shell, text string) string {
	return "cron-gate " + name + " -- " + shellQuote(shell) + " -c " + shellQuote(text)
}

// shellQuote quotes s for a POSIX shell: as it is when every byte is one
// that no shell treats specially, else in single quotes, each single
// quote in s closing the quotes, escaped with a backslash, reopening them.
func shellQuote(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._-+,:@", c) >= 0
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hasUnescapedPercent reports whether cron cuts the command at a %
// (splitPercent's rule).
func hasUnescapedPercent(text string) bool {
	_, _, cut := splitPercentCut(text)
	return cut
}

// envOf is the value of the last NAME=value in env, else def.
func envOf(env []string, name, def string) string {
	v := def
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}

// Words that only prepare or wrap the command a line runs: the gate is
// named after what comes after them.
var (
	setupWords   = map[string]bool{"cd": true, "export": true, "set": true, "umask": true, "sleep": true, "test": true, "[": true, ".": true, "source": true, "true": true, ":": true}
	wrapperWords = map[string]bool{"nice": true, "ionice": true, "nohup": true, "env": true, "exec": true, "chronic": true, "time": true, "timeout": true, "flock": true, "setlock": true, "sudo": true, "runuser": true, "chrt": true, "taskset": true}
	interpreters = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "node": true, "php": true, "Rscript": true}
)

// deriveName proposes a gate name for a command: the script or program
// it runs (after `cd DIR &&`, variable assignments, wrappers such as
// nice, timeout or withlock, and an interpreter), its base name without
// an extension, lower case, with what a gate name cannot hold made '-';
// "job" when nothing is left. It may be taken (uniqueName).
func deriveName(text string) string {
	var prog string
	for _, seg := range splitSegments(text) {
		words := strings.Fields(seg)
		if len(words) == 0 || setupWords[words[0]] {
			continue
		}
		prog = programOf(words)
		if prog != "" {
			break
		}
	}
	return sanitizeName(prog)
}

// splitSegments cuts a command at &&, ||, ; and |, roughly (quotes are
// not followed: it only names the gate).
func splitSegments(text string) []string {
	f := func(r rune) bool { return r == ';' || r == '&' || r == '|' || r == '(' || r == ')' }
	return strings.FieldsFunc(text, f)
}

// programOf is the program or script of one simple command's words.
func programOf(words []string) string {
	skipValue := false
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], `'"`)
		base := path.Base(w)
		switch {
		case w == "":
			continue
		case skipValue:
			skipValue = false
			continue
		case strings.ContainsAny(w, "<>"):
			if strings.HasSuffix(w, ">") || strings.HasSuffix(w, "<") {
				skipValue = true // a redirection's target follows
			}
			continue
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			continue // VAR=value
		case base == "withlock" || base == "cron-gate":
			// Its own command comes after its "--".
			for i+1 < len(words) && words[i+1] != "--" {
				i++
			}
			i++
			continue
		case wrapperWords[base]:
			for i+1 < len(words) && (strings.HasPrefix(words[i+1], "-") || isNumberish(words[i+1])) {
				i++
			}
			if base == "flock" || base == "setlock" || base == "runuser" {
				i++ // the lock file, the user
			}
			continue
		case interpreters[base] || strings.HasPrefix(base, "python3."):
			for i+1 < len(words) && strings.HasPrefix(words[i+1], "-") {
				if words[i+1] == "-c" {
					return base
				}
				if words[i+1] == "-m" && i+2 < len(words) {
					return words[i+2]
				}
				i++
			}
			if i+1 < len(words) {
				return path.Base(strings.Trim(words[i+1], `'"`))
			}
			return base
		case strings.HasPrefix(w, "-"):
			continue
		case base == "run-parts":
			for i+1 < len(words) && strings.HasPrefix(words[i+1], "-") {
				i++
			}
			if i+1 < len(words) {
				return path.Base(strings.Trim(words[i+1], `'"`))
			}
			return base
		}
		return base
	}
	return ""
}

func isNumberish(w string) bool {
	return w != "" && strings.Trim(w, "0123456789.smhd") == ""
}

// sanitizeName makes a word a gate name (gate.CheckName): without a short
// extension, lower case, other bytes '-', at most 40 bytes.
func sanitizeName(word string) string {
	if i := strings.LastIndexByte(word, '.'); i > 0 && len(word)-i-1 >= 1 && len(word)-i-1 <= 4 {
		word = word[:i]
	}
	b := []byte(strings.ToLower(word))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	s := string(b)
	for strings.Contains(s, "--") || strings.Contains(s, "..") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "--", "-"), "..", ".")
	}
	s = strings.Trim(s, "-._")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-._")
	}
	if s == "" {
		return "job"
	}
	if gate.CheckName(s) != nil { // a subcommand's name
		s += "-job"
	}
	return s
}

// uniqueName is name, else name-2, name-3, ... whichever is not taken.
func uniqueName(name string, taken func(string) bool) string {
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if n := name + "-" + strconv.Itoa(i); !taken(n) {
			return n
		}
	}
}

// scheduleInterval is the interval --declare gives a gate run by
// schedule: the longest gap between two consecutive runs over four years
// in UTC (a leap day included; no daylight-saving change stretches a
// gap), for a schedule cron reads; 0 for @reboot or one that never runs.
func scheduleInterval(schedule string) time.Duration {
	s, err := cronexpr.Parse(schedule)
	if err != nil || s.Reboot() {
		return 0
	}
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(4, 0, 1)
	var longest time.Duration
	prev := s.Next(start.Add(-time.Minute), time.UTC)
	if prev.IsZero() {
		return 0
	}
	// Dense schedules repeat within a day or a week: 200,000 runs are
	// 4.6 months of every minute, enough to see every gap of one.
	for n := 0; n < 200000 && prev.Before(end); n++ {
		next := s.Next(prev, time.UTC)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// formatInterval is an interval as the config writes it ("5m", "1d").
func formatInterval(d time.Duration) string { return runner.FormatDuration(d) }

// unifiedDiff is `diff -u` of a crontab and its adopted text, which has
// the same lines but the wrapped ones: hunks of the changed lines with
// three lines of context, headers "--- label" and "+++ label". "" when
// nothing changed.
func unifiedDiff(label string, p *adoptPlan) string {
	if len(p.wrapped) == 0 {
		return ""
	}
	changed := map[int]string{}
	var idx []int
	for _, c := range p.wrapped {
		changed[c.line-1] = c.new
		idx = append(idx, c.line-1)
	}
	const ctx = 3
	n := len(p.lines)
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", label, label)
	for k := 0; k < len(idx); {
		first := idx[k]
		last := first
		for k+1 < len(idx) && idx[k+1]-last <= 2*ctx {
			k++
			last = idx[k]
		}
		k++
		lo, hi := max(0, first-ctx), min(n, last+ctx+1)
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(lo, hi), hunkRange(lo, hi))
		for i := lo; i < hi; {
			if _, ok := changed[i]; !ok {
				diffLine(&b, ' ', p.lines[i], i == n-1 && !p.final)
				i++
				continue
			}
			j := i
			for j < hi {
				if _, ok := changed[j]; !ok {
					break
				}
				j++
			}
			for m := i; m < j; m++ {
				diffLine(&b, '-', p.lines[m], false)
			}
			for m := i; m < j; m++ {
				diffLine(&b, '+', changed[m], false)
			}
			i = j
		}
	}
	return b.String()
}

// hunkRange is a hunk's "start,count" for lines [lo, hi) (1-based start;
// diff omits a count of 1).
func hunkRange(lo, hi int) string {
	if hi-lo == 1 {
		return strconv.Itoa(lo + 1)
	}
	return strconv.Itoa(lo+1) + "," + strconv.Itoa(hi-lo)
}

func diffLine(b *bytes.Buffer, mark byte, line string, noNewline bool) {
	b.WriteByte(mark)
	b.WriteString(line)
	b.WriteByte('\n')
	if noNewline {
		b.WriteString("\\ No newline at end of file\n")
	}
}
