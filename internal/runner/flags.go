//go:build linux

package runner

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The flags both wrappers share, defined once: withlock's CLI and
// cron-gate's kong structs embed them, kong reads their tags, and so does
// FastParse, each tool's per-tick parser. ${verbose_more} and
// ${quiet_more} are each tool's own end of a sentence (FlagVars).

// TimeoutFlags are --timeout and --kill-after.
type TimeoutFlags struct {
	Timeout   time.Duration `placeholder:"DURATION" help:"Stop the command (TERM, then KILL to its process group) if it runs longer (90m, 2h, 1d); exit 124."`
	KillAfter time.Duration `default:"${killafter}" placeholder:"DURATION" help:"Grace between TERM and KILL on --timeout (default ${killafter})."`
}

// OutputFlags are -v and -q.
type OutputFlags struct {
	Verbose bool `short:"v" help:"Say why the command was skipped also when stderr is not a terminal (under cron, which mails it)${verbose_more}."`
	Quiet   bool `short:"q" help:"Do not say why the command was skipped, not even on a terminal${quiet_more}."`
}

// FlagVars are the values the shared flags' tags name, with a tool's own
// ends of the -v and -q sentences; each tool adds its own values.
func FlagVars(verboseMore, quietMore string) map[string]string {
	return map[string]string{
		"killafter":    FormatDuration(DefaultKillAfter),
		"verbose_more": verboseMore,
		"quiet_more":   quietMore,
	}
}

// FastParse fills dst, a pointer to a struct whose fields carry kong's
// tags (anonymous structs flattened, as kong does), from the common,
// well-formed command lines, without kong, whose reflective set-up costs
// more than the rest of a per-tick call. It reads the same tags kong
// does — the flag's name (from the field, as kong derives it, or name:),
// short:, default: (with ${var} from vars), env:, sep:, and one
// positional arg: — so each flag is defined once. It accepts long flags
// with "=" or a separate value (not starting with "-", but "-" itself),
// a short flag alone, a bool flag once, ints in plain decimal, durations
// by runner.ParseDuration's rule; anything else — help, an unknown, repeated
// or bundled flag, an empty value, a tag it does not read (enum:, xor:,
// type:, …, or fast:"-", which leaves a flag to kong), a second
// positional — returns false, and kong parses the
// line, with its help and error messages. Each tool's FuzzFastParse holds
// it to kong's result.
func FastParse(args []string, dst any, vars map[string]string) bool {
	t := fastTable{byLong: map[string]*fastFlag{}, byShort: map[string]*fastFlag{}}
	if !t.add(reflect.ValueOf(dst).Elem(), vars) {
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if !t.hasArg || t.argSet || a == "" {
				return false
			}
			t.arg.SetString(a)
			t.argSet = true
			continue
		}
		var f *fastFlag
		val, hasVal := "", false
		if strings.HasPrefix(a, "--") {
			name, v, ok := strings.Cut(a[2:], "=")
			f, val, hasVal = t.byLong[name], v, ok
		} else {
			f = t.byShort[a[1:]]
		}
		if f == nil || f.unread || (f.seen && !f.repeat) {
			return false
		}
		f.seen = true
		if f.v.Kind() == reflect.Bool {
			if hasVal {
				return false
			}
			f.v.SetBool(true)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) || (strings.HasPrefix(args[i+1], "-") && args[i+1] != "-") {
				return false
			}
			i++
			val = args[i]
		}
		if val == "" || !f.set(val) {
			return false
		}
	}
	return !t.hasArg || t.argSet
}

// fastTable is FastParse's view of a struct's tags.
type fastTable struct {
	byLong, byShort map[string]*fastFlag
	arg             reflect.Value // the positional (a string), if any
	hasArg, argSet  bool
}

// fastFlag is one flag: its field, and how kong would fill it.
type fastFlag struct {
	v      reflect.Value
	sep    string // a slice's separator: "none" (one value per flag) or ","
	repeat bool   // a slice: may be given again
	unread bool   // a tag FastParse does not read: decline the flag
	seen   bool
}

// add reads the flags of struct v into t, filling in their defaults and
// environment values; false for a struct it cannot read.
func (t *fastTable) add(v reflect.Value, vars map[string]string) bool {
	for i := 0; i < v.NumField(); i++ {
		sf, fv := v.Type().Field(i), v.Field(i)
		tag := readTag(sf.Tag)
		switch {
		case !sf.IsExported() || tag.kong == "-":
			continue
		case sf.Anonymous && fv.Kind() == reflect.Struct:
			if !t.add(fv, vars) {
				return false
			}
			continue
		case tag.cmd:
			return false
		case tag.arg:
			if t.hasArg || fv.Kind() != reflect.String {
				return false
			}
			t.arg, t.hasArg = fv, true
			continue
		}
		f := &fastFlag{v: fv, sep: tag.sep, unread: tag.unread}
		switch fv.Type() {
		case stringsType, intsType:
			f.repeat = true
			if f.sep == "" {
				f.sep = ","
			}
		case boolType, stringType, intType, durationType:
		default:
			f.unread = true // kong's own types (kong.VersionFlag, ...) and any other
		}
		if tag.hasDefault && !f.unread {
			d, ok := expandVars(tag.def, vars)
			if !ok || !f.set(d) {
				return false
			}
		}
		if tag.env != "" && !f.unread {
			if ev, ok := os.LookupEnv(tag.env); ok {
				if fv.Kind() != reflect.String {
					f.unread = true // kong's reading of a non-string variable is left to it
				} else {
					fv.SetString(ev)
				}
			}
		}
		name := tag.name
		if name == "" {
			name = kongName(sf.Name)
		}
		t.byLong[name] = f
		if tag.short != "" {
			t.byShort[tag.short] = f
		}
	}
	return true
}

var (
	boolType     = reflect.TypeOf(false)
	stringType   = reflect.TypeOf("")
	intType      = reflect.TypeOf(0)
	durationType = reflect.TypeOf(time.Duration(0))
	stringsType  = reflect.TypeOf([]string(nil))
	intsType     = reflect.TypeOf([]int(nil))
)

// fieldTag is what FastParse reads of a field's kong tags.
type fieldTag struct {
	name, short, def, env, sep, kong string
	hasDefault, arg, cmd             bool
	unread                           bool // a tag FastParse does not read (fast:"-" leaves a flag to kong on purpose)
}

// readTag reads a struct tag's keys in one pass (reflect.StructTag.Lookup
// per key scans the whole tag each time: most of the parser's cost).
func readTag(st reflect.StructTag) (t fieldTag) {
	s := string(st)
	for s != "" {
		s = strings.TrimLeft(s, " ")
		k := strings.IndexByte(s, ':')
		if k <= 0 || k+1 >= len(s) || s[k+1] != '"' {
			return t
		}
		key := s[:k]
		// The value: up to the closing quote, past escaped ones.
		j := k + 2
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			return t
		}
		raw := s[k+1 : j+1]
		s = s[j+1:]
		// As reflect.StructTag.Lookup reads it (strconv.Unquote: no copy
		// for a plain value; bytes that are not UTF-8 become U+FFFD).
		val, err := strconv.Unquote(raw)
		if err != nil {
			t.unread = true
			continue
		}
		switch key {
		case "name":
			t.name = val
		case "short":
			t.short = val
		case "default":
			t.def, t.hasDefault = val, true
		case "env":
			t.env = val
		case "sep":
			t.sep = val
		case "kong":
			t.kong = val
		case "arg":
			t.arg = true
		case "cmd":
			t.cmd = true
		case "fast", "enum", "xor", "and", "type", "negatable", "required", "mapper", "prefix", "embed", "default-env":
			t.unread = true
		}
	}
	return t
}

// set reads one value into the flag's field as kong would, or returns
// false where it is not sure kong would read it the same.
func (f *fastFlag) set(val string) bool {
	switch v := f.v; {
	case v.Type() == durationType:
		d, err := ParseDuration(val)
		if err != nil {
			return false
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(val)
	case v.Kind() == reflect.Int:
		n, ok := smallInt(val)
		if !ok {
			return false
		}
		v.SetInt(int64(n))
	case v.Kind() == reflect.Slice:
		pieces := []string{val}
		if f.sep != "none" {
			// kong splits on the separator honouring "\" escapes, and
			// reads a piece that starts with "-" its own way; a list it
			// might split otherwise, or with an empty entry, is left to it.
			pieces = strings.Split(val, f.sep)
			for _, p := range pieces {
				if p == "" || strings.HasPrefix(p, "-") || strings.Contains(p, `\`) {
					return false
				}
			}
		}
		for _, p := range pieces {
			e := reflect.New(v.Type().Elem()).Elem()
			if e.Kind() == reflect.Int {
				n, ok := smallInt(p)
				if !ok {
					return false
				}
				e.SetInt(int64(n))
			} else {
				e.SetString(p)
			}
			v.Set(reflect.Append(v, e))
		}
	default:
		return false
	}
	return true
}

// smallInt accepts plain decimal numbers only: kong reads "010" as octal
// and "0x10" as hex, and those cases are left to kong.
func smallInt(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// expandVars replaces each ${name} in s with vars[name], as kong does;
// false if one is not there.
func expandVars(s string, vars map[string]string) (string, bool) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return b.String() + s, true
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", false
		}
		v, ok := vars[s[i+2:i+j]]
		if !ok {
			return "", false
		}
		b.WriteString(s[:i] + v)
		s = s[i+j+1:]
	}
}

// kongName is the flag name kong derives from a field's name.
func kongName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii {
		return strings.ToLower(strings.Join(kongWords(s), "-"))
	}
	// kongWords for ASCII, without its allocations: a word starts at an
	// upper-case letter after a lower-case one or a digit, at a digit
	// after a letter, at a letter after a digit, and at the last letter
	// of an upper-case run that a lower-case letter follows.
	class := func(c byte) int {
		switch {
		case c >= 'a' && c <= 'z':
			return 1
		case c >= 'A' && c <= 'Z':
			return 2
		case c >= '0' && c <= '9':
			return 3
		}
		return 4
	}
	b := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 {
			prev, cur := class(s[i-1]), class(c)
			split := prev != cur && !(prev == 2 && cur == 1)
			if prev == 2 && cur == 2 && i+1 < len(s) && class(s[i+1]) == 1 {
				split = true
			}
			if split {
				b = append(b, '-')
			}
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// kongWords splits a field's name into words as kong does for its flag
// names ("KillAfter" kill-after, "CAFile" ca-file, "TTL" ttl): runs of
// lower case, upper case, digits and the rest, an upper-case run giving
// its last letter to a lower-case run after it.
func kongWords(s string) []string {
	if !utf8.ValidString(s) {
		return []string{s}
	}
	var runs [][]rune
	last := 0
	for _, r := range s {
		class := 4
		switch {
		case unicode.IsLower(r):
			class = 1
		case unicode.IsUpper(r):
			class = 2
		case unicode.IsDigit(r):
			class = 3
		}
		if class == last {
			runs[len(runs)-1] = append(runs[len(runs)-1], r)
		} else {
			runs = append(runs, []rune{r})
		}
		last = class
	}
	for i := 0; i < len(runs)-1; i++ {
		if unicode.IsUpper(runs[i][0]) && unicode.IsLower(runs[i+1][0]) {
			runs[i+1] = append([]rune{runs[i][len(runs[i])-1]}, runs[i+1]...)
			runs[i] = runs[i][:len(runs[i])-1]
		}
	}
	var out []string
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, string(r))
		}
	}
	return out
}
