//go:build linux

package watch

// Reading a crontab as Debian's cron reads it (cron 3.0pl1-162, user.c's
// load_user, env.c's load_env, entry.c's load_entry; the schedule itself
// is package cronexpr's). What matters to the watchdog is which cron-gate
// lines cron runs, and that is not every line that looks like one:
//
//   - the first line cron cannot read makes it ignore the whole file
//     ("Syntax error, this crontab file will be ignored"): a bad schedule
//     (cronexpr's words: "bad minute", "bad time specifier"), in a system
//     crontab a user that does not exist ("bad username"), in a user's a
//     command that begins with '*' ("bad command", a sixth schedule field),
//     a command of 999 bytes or more ("command too long");
//   - so does a last line without a newline ("Missing newline before EOF")
//     unless it is blank or a comment, and a file whose entries run past
//     its 10,000th line (10,003rd in a system crontab, which has no
//     header);
//   - lines that are blank or begin with '#' after blanks are comments;
//     a line that parses as NAME=value (load_env's rules, quotes
//     included) sets the environment.
//
// The file's own rules (owner, mode, links, name) are the probe's
// (probe.go).

import (
	"bytes"
	"path"
	"strconv"
	"strings"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/cronexpr"
)

// CrontabJob is one cron-gate job of a crontab: the gate it runs, the
// schedule that runs it, where the line is, and whether cron runs it.
// ReadCrontabEntries returns one for every entry line, cron-gate's or not
// (Gate "" for the others).
type CrontabJob struct {
	Gate     string // the gate: the first word after cron-gate that is not an option and is a valid gate name
	Schedule string // the line's schedule as cron delimits it: five fields, or an @ word
	Source   string // the crontab: "crontab -l" (the user's, as listed) or a file's path
	Line     int    // 1-based line number in Source
	// Rejected says why Debian's cron does not run the line: the line's
	// own error ("bad minute: ..."), or its file's (the first bad line,
	// the file's owner or mode...); "" when cron runs it.
	Rejected string
	// CronTZ is the value of the last CRON_TZ= line above it ("" none).
	// Debian's cron does not read it (cron(8): it "will only handle tasks
	// in a single timezone"; the variable only reaches the job's
	// environment), so cron-gate computes next runs in cron's zone all
	// the same and says so (cronie would honour it).
	CronTZ string
	// Command is the line's command after `cron-gate [FLAGS] NAME --`, as
	// cron hands it to the shell, and Flags the words between cron-gate
	// and NAME; both empty when cron-gate is not the first word of the
	// line's command (a `sh -c '…'` line, a pipeline).
	Command string
	Flags   []string
	// Text is the whole command of the line as cron gives it to the
	// shell (after the schedule, and in a system crontab after the user
	// field and the one blank after it); User is a system crontab line's
	// user field ("" in a user's crontab: its owner runs it). Config is
	// the --config the line gives cron-gate for this gate ("" none).
	Text   string
	User   string
	Config string
	// Env is the crontab's own settings above the line, "NAME=value" in
	// order (a later one of a name wins), as load_env reads them: what
	// cron puts in the job's environment before its defaults (CronEnv).
	Env []string
}

// Where is the job's source and line, "/etc/cron.d/blog:3".
func (j CrontabJob) Where() string { return j.Source + ":" + strconv.Itoa(j.Line) }

// Limits of Debian's cron (cron.h).
const (
	maxTabLines  = 10000 // MAX_TAB_LINES
	nHeaderLines = 3     // NHEADER_LINES: the header crontab(1) writes into a user's crontab
	maxCommand   = 1000  // MAX_COMMAND: a command of MAX_COMMAND-1 bytes or more is refused
	maxEnvStr    = 1000  // MAX_ENVSTR
)

// ReadCrontab reads a crontab's text as Debian's cron's load_user does and
// returns its cron-gate jobs in order of appearance, and, when cron
// ignores the whole file, why ("" when it reads it). system is the format
// of /etc/crontab and /etc/cron.d (a user field after the schedule);
// userExists tells whether a user of such a line exists (getpwnam), and
// is not called for a user's crontab.
//
// A job's Rejected is its own line's error when cron cannot read it, else
// the file's reason when cron ignores the file; a job after the first bad
// line is rejected with the file. A gate is found as cron-gate runs it:
// in a line that is not a comment, a word (quotes stripped) that is
// "cron-gate" or a path ending in "/cron-gate", then the first word after
// it that is not an option (--config FILE, --timeout D and --kill-after D
// take a value) and is a valid gate name; lines that run cron-gate
// through a shell (sh -c '... cron-gate X -- ...') are found too.
func ReadCrontab(data []byte, source string, system bool, userExists func(string) bool) (jobs []CrontabJob, fileErr string) {
	return readCrontab(data, source, system, userExists, false)
}

// ReadCrontabEntries is ReadCrontab for every entry line, not only
// cron-gate's: the others have Gate "" (and no Flags, Command, Config).
// The Text of an entry that cron reads is the end of its line, byte for
// byte (trailing blanks included), so the line's bytes before it are the
// schedule and user field as written.
func ReadCrontabEntries(data []byte, source string, system bool, userExists func(string) bool) (entries []CrontabJob, fileErr string) {
	return readCrontab(data, source, system, userExists, true)
}

// readCrontab is ReadCrontab, with every entry when all is true.
func readCrontab(data []byte, source string, system bool, userExists func(string) bool, all bool) (jobs []CrontabJob, fileErr string) {
	lastLine := maxTabLines + nHeaderLines
	if !system {
		// A user's crontab is listed without the header crontab(1)
		// wrote into the file cron reads: its lines come 3 later there.
		lastLine = maxTabLines
	}
	lines := bytes.Split(data, []byte{'\n'})
	unterminated := len(lines[len(lines)-1]) > 0
	if !unterminated {
		lines = lines[:len(lines)-1]
	}
	// unread lists the jobs of the lines from i on, which cron never
	// reads once it has given up on the file.
	unread := func(i int) {
		for ; i < len(lines); i++ {
			line := strings.TrimLeft(string(lines[i]), " \t")
			if line == "" || line[0] == '#' || isEnvLine(line) {
				continue
			}
			if job, ok, _ := readEntry(line, system, func(string) bool { return true }); ok || all {
				job.Source, job.Line = source, i+1
				jobs = append(jobs, job)
			}
		}
	}
	cronTZ := ""
	var vars []string
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimLeft(string(raw), " \t") // skip_comments
		if line == "" || line[0] == '#' {
			continue
		}
		if unterminated && i == len(lines)-1 {
			fileErr = "line " + strconv.Itoa(n) + " has no newline at the end of the file (cron: Missing newline before EOF, this crontab file will be ignored)"
			unread(i)
			break
		}
		if n >= lastLine+1 {
			fileErr = "more than " + strconv.Itoa(maxTabLines) + " lines (cron: crontab must not be longer than 10000 lines, this crontab file will be ignored)"
			unread(i)
			break
		}
		if name, value, ok := EnvLine(line); ok {
			if v, ok := cronTZLine(line); ok {
				cronTZ = v
			}
			vars = append(vars, name+"="+value)
			continue
		}
		job, gateFound, err := readEntry(line, system, userExists)
		gateFound = gateFound || all
		if gateFound {
			job.Source, job.Line, job.CronTZ = source, n, cronTZ
			job.Env = append([]string(nil), vars...)
		}
		if err != "" {
			if gateFound {
				job.Rejected = err
				jobs = append(jobs, job)
			}
			fileErr = "line " + strconv.Itoa(n) + ": " + err + " (cron: Syntax error, this crontab file will be ignored)"
			unread(i + 1)
			break
		}
		if gateFound {
			jobs = append(jobs, job)
		}
	}
	if fileErr != "" {
		for k := range jobs {
			if jobs[k].Rejected == "" {
				jobs[k].Rejected = "cron ignores the whole file: " + fileErr
			}
		}
	}
	return jobs, fileErr
}

// readEntry reads one entry line (leading blanks removed) as load_entry
// does; it returns the entry (without its source), whether it is a
// cron-gate job, and cron's error for the line ("" when cron reads it). The schedule of
// a line cron cannot read is its first five words (or @ word), for
// messages.
func readEntry(line string, system bool, userExists func(string) bool) (job CrontabJob, found bool, err string) {
	sched, rest, perr := cronexpr.ParseEntry(line)
	var schedText string
	if perr != nil {
		schedText, rest = roughSchedule(line)
	} else {
		schedText = sched.String()
	}
	command := rest
	if perr == nil && system {
		// get_string(username, " \t"): the user, then the command after
		// exactly that one blank.
		i := strings.IndexAny(rest, " \t")
		switch {
		case rest == "" || i < 0:
			// cron reads the user on into the next line.
			err = "bad username: no command after the user field"
		case !userExists(rest[:i]):
			err = "bad username: no user " + strconv.Quote(rest[:i])
		default:
			command = rest[i+1:]
		}
		if i >= 0 {
			job.User, command = rest[:i], rest[i+1:]
		}
	}
	if perr == nil && err == "" {
		switch {
		case !system && strings.HasPrefix(rest, "*"):
			err = "bad command: it begins with '*' (a sixth schedule field?)"
		case len(command) >= maxCommand-1:
			err = "command too long: " + strconv.Itoa(len(command)) + " bytes; cron reads at most " + strconv.Itoa(maxCommand-2)
		}
	}
	if perr != nil {
		err = perr.Error()
	}
	if g, cfg := commandGate(command); g != "" {
		flags, cmd := commandAfter(command, g)
		return CrontabJob{Gate: g, Schedule: schedText, Flags: flags, Command: cmd,
			Text: command, User: job.User, Config: cfg}, true, err
	}
	return CrontabJob{Schedule: schedText, Text: command, User: job.User}, false, err
}

// roughSchedule splits a line cron cannot read into what looks like its
// schedule (an @ word, else five words) and the rest, for messages.
func roughSchedule(line string) (sched, rest string) {
	n := 5
	if strings.HasPrefix(line, "@") {
		n = 1
	}
	rest = line
	var words []string
	for k := 0; k < n && rest != ""; k++ {
		var w string
		w, rest, _ = strings.Cut(rest, " ")
		if i := strings.IndexByte(w, '\t'); i >= 0 {
			w, rest = w[:i], w[i+1:]+" "+rest
		}
		rest = strings.TrimLeft(rest, " \t")
		words = append(words, w)
	}
	return strings.Join(words, " "), rest
}

// commandGate returns the gate a crontab command runs through cron-gate,
// or "", and the --config that cron-gate is given ("" none).
func commandGate(command string) (name, config string) {
	words := strings.Fields(command)
	for i := 0; i < len(words); i++ {
		if path.Base(strings.Trim(words[i], `'"(;&|`)) != "cron-gate" {
			continue
		}
		if g, cfg := gateAfter(words[i+1:]); g != "" {
			return g, cfg
		}
	}
	return "", ""
}

// gateAfter returns the gate name among the words after "cron-gate", and
// the --config given before it.
func gateAfter(words []string) (name, config string) {
	for j := 0; j < len(words); j++ {
		w := strings.Trim(words[j], `'"`)
		switch {
		case w == "--":
			return "", ""
		case w == "--config" && j+1 < len(words):
			config = strings.Trim(words[j+1], `'"`)
			j++
			continue
		case w == "--timeout" || w == "--kill-after" || w == "--once-per" || w == "--jitter":
			j++
			continue
		case strings.HasPrefix(w, "--config="):
			config = strings.TrimPrefix(w, "--config=")
			continue
		case strings.HasPrefix(w, "-"):
			continue
		case w == "run":
			continue
		}
		if gate.CheckName(w) == nil {
			return w, config
		}
		return "", ""
	}
	return "", ""
}

// isEnvLine reports whether a line (leading blanks removed) sets a
// variable (EnvLine).
func isEnvLine(line string) bool {
	_, _, ok := EnvLine(line)
	return ok
}

// EnvLine reads a crontab line (leading blanks removed) that sets a
// variable, following env.c's load_env state by state: NAME (or a quoted
// name), blanks, '=', blanks, a value (or a quoted value) and only blanks
// after a closing quote. An unquoted value loses its trailing blanks;
// then, as load_env does after that, trailing blanks again and one pair
// of matching quotes around what is left. What load_env refuses is not
// a setting (ok false): cron reads it as an entry.
func EnvLine(line string) (name, value string, ok bool) {
	const (
		nameI = iota
		nameS
		eq1
		eq2
		valueI
		valueS
		fini
		bad
	)
	if len(line) > maxEnvStr-2 {
		line = line[:maxEnvStr-2] // get_string(envstr, MAX_ENVSTR - 1)
	}
	state := nameI
	var quote byte
	var nb, vb []byte
	for i := 0; i < len(line) && state != bad; {
		c := line[i]
		switch state {
		case nameI, valueI:
			if c == '\'' || c == '"' {
				quote = c
				i++
			}
			state++
			continue
		case nameS, valueS:
			if quote != 0 {
				if c == quote {
					state++
					i++
					continue
				}
				if state == nameS && c == '=' {
					state = bad
					continue
				}
			} else if state == nameS {
				if isSpace(c) {
					state++
					i++
					continue
				}
				if c == '=' {
					state++
					continue
				}
			}
			if state == nameS {
				nb = append(nb, c)
			} else {
				vb = append(vb, c)
			}
			i++
		case eq1:
			if c == '=' {
				state++
				quote = 0
			} else if !isSpace(c) {
				state = bad
			}
			i++
		case eq2, fini:
			if isSpace(c) {
				i++
			} else {
				state++
			}
		}
	}
	if state != fini && !(state == valueS && quote == 0) {
		return "", "", false
	}
	// strdtb, then one pair of matching quotes (3.0's value processing,
	// kept after the 4.1 parser).
	v := strings.TrimRightFunc(string(vb), func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	// The name and value must fit MAX_ENVSTR together.
	if len(nb)+1+len(v) >= maxEnvStr-1 {
		return "", "", false
	}
	return string(nb), v, true
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
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

// commandAfter reads a crontab command whose first word is cron-gate (or
// a path to it) followed by `[FLAGS] NAME -- COMMAND`: the flags' words
// and COMMAND's text as written (the rest of the command after the "--"
// word). Both are empty when the command is not of that form.
func commandAfter(command, name string) ([]string, string) {
	type field struct {
		s   string
		end int
	}
	var fs []field
	for i := 0; i < len(command); {
		for i < len(command) && (command[i] == ' ' || command[i] == '\t') {
			i++
		}
		start := i
		for i < len(command) && command[i] != ' ' && command[i] != '\t' {
			i++
		}
		if i > start {
			fs = append(fs, field{command[start:i], i})
		}
	}
	if len(fs) == 0 || path.Base(fs[0].s) != "cron-gate" {
		return nil, ""
	}
	var flags []string
	for k := 1; k < len(fs); k++ {
		switch w := fs[k].s; {
		case w == name && k+1 < len(fs) && fs[k+1].s == "--":
			cmd := strings.TrimSpace(command[fs[k+1].end:])
			if cmd == "" {
				return nil, ""
			}
			return flags, cmd
		case strings.HasPrefix(w, "-") && w != "--":
			flags = append(flags, w)
		case w == "run":
		default:
			if last := len(flags) - 1; last >= 0 && strings.HasPrefix(flags[last], "--") && !strings.Contains(flags[last], "=") &&
				flags[last] != "--quiet" && flags[last] != "--verbose" {
				flags = append(flags, w) // a flag's value
				continue
			}
			return nil, ""
		}
	}
	return nil, ""
}
