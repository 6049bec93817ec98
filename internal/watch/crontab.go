//go:build linux

package watch

import (
	"bufio"
	"bytes"
	"path"
	"strings"

	"github.com/crongate/crongate/gate"
)

// CrontabGates returns the gates that the cron-gate commands of a crontab
// (user or system format) run, in order of appearance, without duplicates.
//
// A line counts when it is not a comment (a job commented out is not
// scheduled) and one of its words, quotes stripped, is "cron-gate" or a
// path ending in "/cron-gate"; the gate is the first word after it that is
// not an option (--config FILE, --timeout D and --kill-after D take a
// value) — the same words cron-gate itself parses — and is a valid gate
// name. Lines that run cron-gate through a shell (sh -c '... cron-gate X
// -- ...') are found too, since quotes are stripped from each word.
func CrontabGates(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		words := strings.Fields(line)
		for i := 0; i < len(words); i++ {
			if path.Base(strings.Trim(words[i], `'"(;&|`)) != "cron-gate" {
				continue
			}
			if g := gateAfter(words[i+1:]); g != "" && !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// gateAfter returns the gate name among the words after "cron-gate".
func gateAfter(words []string) string {
	for j := 0; j < len(words); j++ {
		w := strings.Trim(words[j], `'"`)
		switch {
		case w == "--":
			return ""
		case w == "--config" || w == "--timeout" || w == "--kill-after" || w == "--once-per" || w == "--jitter":
			j++
			continue
		case strings.HasPrefix(w, "-"):
			continue
		case w == "run":
			continue
		}
		if gate.CheckName(w) == nil {
			return w
		}
		return ""
	}
	return ""
}

// commandAfter reads a line whose field at (the cron-gate word) is
// followed by `[FLAGS] NAME -- COMMAND`: the flags' words and COMMAND's
// text as written (the rest of the line after the "--" field). Both are
// empty when the line is not of that form.
func commandAfter(line string, at int, name string) ([]string, string) {
	type field struct {
		s   string
		end int
	}
	var fs []field
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		if i > start {
			fs = append(fs, field{line[start:i], i})
		}
	}
	var flags []string
	for k := at + 1; k < len(fs); k++ {
		switch w := fs[k].s; {
		case w == name && k+1 < len(fs) && fs[k+1].s == "--":
			cmd := strings.TrimSpace(line[fs[k+1].end:])
			if cmd == "" {
				return nil, ""
			}
			return flags, cmd
		case strings.HasPrefix(w, "-") && w != "--":
			flags = append(flags, w)
		case w == "run":
		default:
			if len(flags) > 0 && !strings.Contains(flags[len(flags)-1], "=") && strings.HasPrefix(flags[len(flags)-1], "--") &&
				flags[len(flags)-1] != "--quiet" && flags[len(flags)-1] != "--verbose" {
				flags = append(flags, w) // a flag's value
				continue
			}
			return nil, ""
		}
	}
	return nil, ""
}

// CrontabJob is one cron-gate job of a crontab: the gate it runs and the
// schedule that runs it.
type CrontabJob struct {
	Gate     string // as CrontabGates finds it
	Schedule string // the line's schedule as written: five fields, or an @ nickname
	Line     int    // 1-based line number in the crontab
	// CronTZ is the value of the last CRON_TZ= line above it ("" none).
	// Debian's cron does not read it (cron(8): it "will only handle tasks
	// in a single timezone"; the variable only reaches the job's
	// environment), so cron-gate computes next runs in the system zone
	// all the same and says so (cronie would honour it).
	CronTZ string
	// Command is the line's command after `cron-gate [FLAGS] NAME --`,
	// as cron hands it to the shell, and Flags the words between
	// cron-gate and NAME; both empty when cron-gate is not the first
	// word of the line's command (a `sh -c '…'` line, a pipeline).
	Command string
	Flags   []string
}

// cronTZLine returns the value a CRON_TZ line sets ("NAME=value" or
// "NAME = value", quotes stripped), and whether line is one.
func cronTZLine(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "CRON_TZ")
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if !strings.HasPrefix(rest, "=") {
		return "", false
	}
	v := strings.TrimSpace(rest[1:])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v, true
}

// CrontabJobs returns the cron-gate jobs of a crontab in order of
// appearance, one per line that CrontabGates would count (a gate run by
// two lines appears twice). The schedule is the line's first five words,
// or its first word when that starts with '@'; it is not checked here
// (package cronexpr reads it). Environment lines (NAME=value) are not
// jobs. The user field of a system crontab follows the schedule, so both
// formats give the same schedule.
func CrontabJobs(data []byte) []CrontabJob {
	var out []CrontabJob
	cronTZ := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if v, ok := cronTZLine(line); ok {
			cronTZ = v
			continue
		}
		words := strings.Fields(line)
		if eq := strings.IndexByte(words[0], '='); eq > 0 && words[0][0] != '@' && !strings.ContainsAny(words[0][:eq], "*/,-") {
			continue // an environment line: NAME=value
		}
		nsched := 5
		if strings.HasPrefix(words[0], "@") {
			nsched = 1
		}
		if len(words) <= nsched {
			continue
		}
		for i := nsched; i < len(words); i++ {
			if path.Base(strings.Trim(words[i], `'"(;&|`)) != "cron-gate" {
				continue
			}
			if g := gateAfter(words[i+1:]); g != "" {
				j := CrontabJob{Gate: g, Schedule: strings.Join(words[:nsched], " "), Line: n, CronTZ: cronTZ}
				if i == nsched || i == nsched+1 { // the command's first word (a system crontab has a user field first)
					j.Flags, j.Command = commandAfter(line, i, g)
				}
				out = append(out, j)
				break
			}
		}
	}
	return out
}
