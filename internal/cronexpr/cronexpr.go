// Package cronexpr reads the schedule of a crontab line — five fields or
// an @ nickname — exactly as Debian's cron (Vixie cron 3.0pl1 with
// Debian's patches, package cron 3.0pl1-162) reads it: what it accepts,
// what it rejects and with which of its error words ("bad minute"), the
// next time it runs a line, and the line in English words.
//
// The accept/reject rules are those of entry.c's load_entry, get_list,
// get_range and get_number in that package, followed one by one (each
// function below names the one it follows). They differ from cronie's and
// from most libraries' in ways that matter to an operator, because a line
// Debian's cron rejects makes it ignore the whole file:
//
//   - N/S (a single number with a step, "5/15", "0 1/2") is rejected
//     ("bad minute"); write N-59/S;
//   - @ nicknames are case-sensitive: "@daily" is read, "@Daily" and
//     "@HOURLY" are "bad time specifier";
//   - a step larger than the field is accepted: "*/61" in the minute
//     field is minute 0, "*/32" minutes 0 and 32;
//   - a backwards range is accepted and empty: "fri-sun" names no day
//     (Sunday is 0), "5-1" no minute;
//   - after an element, anything up to the next blank that is not a
//     comma is ignored: "1#2" is 1 (every Monday, not Quartz's second
//     Monday), "*x" is "*";
//   - a number is at most 999 characters and is read as C's atoi would
//     (strtol, cut to an int), names (jan, mon) are case-insensitive, and
//     7 is Sunday too.
//
// There is no seconds field, and no L, W, # or ? of Quartz. Whatever cron
// rejects is an error, so a caller can show the raw text instead of a
// wrong reading.
package cronexpr

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxLen bounds the text Parse accepts: a schedule is a few dozen bytes,
// and the input may come from anywhere.
const MaxLen = 1024

// field indexes.
const (
	fMinute = iota
	fHour
	fDom
	fMonth
	fDow
	nFields
)

var fieldNames = [nFields]string{"minute", "hour", "day of month", "month", "day of week"}

// cronWords are the words Debian's cron logs for a field it cannot read
// (entry.c's ecodes), in field order.
var cronWords = [nFields]string{"bad minute", "bad hour", "bad day-of-month", "bad month", "bad day-of-week"}

// bounds of each field (cron.h's FIRST_* and LAST_*); day of week accepts
// 7 (Sunday) and stores it as 0.
var fieldMin = [nFields]int{0, 0, 1, 1, 0}
var fieldMax = [nFields]int{59, 23, 31, 12, 7}

// The names cron knows (cron.h's MonthNames and DowNames, compared with
// strcasecmp): Sunday is found first as 0.
var monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var dowNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// maxNumber is cron's MAX_TEMPSTR: get_number refuses a word of this many
// characters or more.
const maxNumber = 1000

// item is one element of a field's list that names at least one value:
// lo-hi/step. A lone number N is N-N/1, "*" is min-max with star set.
// Elements that name no value (a backwards range) are not kept.
type item struct {
	lo, hi, step int
	star         bool
}

// Schedule is a parsed crontab schedule. The zero value is not usable;
// get one from Parse.
type Schedule struct {
	expr   string
	reboot bool
	bits   [nFields]uint64 // bit n set: value n matches (dow: 0..6)
	items  [nFields][]item
	// domStar, dowStar: the field began with '*' (Vixie's DOM_STAR and
	// DOW_STAR). When either is set a day must match both fields,
	// otherwise either (the OR rule of crontab(5)).
	domStar, dowStar bool
	// minStar, hourStar: the minute or hour field began with '*'
	// (Vixie's MIN_STAR and HR_STAR): cron's "wildcard" jobs, which it
	// treats apart from fixed-time jobs across daylight-saving changes.
	minStar, hourStar bool
}

// nickname returns the fields an @ word of entry.c stands for, compared
// with strcmp (so case-sensitive). @reboot has none. A switch, not a map:
// a map literal at package level is built at every start-up.
func nickname(word string) (fields string, ok bool) {
	switch word {
	case "yearly", "annually":
		return "0 0 1 1 *", true
	case "monthly":
		return "0 0 1 * *", true
	case "weekly":
		return "0 0 * * 0", true
	case "daily", "midnight":
		return "0 0 * * *", true
	case "hourly":
		return "0 * * * *", true
	}
	return "", false
}

// Error is why cron does not read a schedule: Word is what Debian's cron
// logs for it ("bad minute", "bad time specifier"), Msg says what is
// wrong in that field, for people.
type Error struct {
	Word string
	Msg  string
}

func (e *Error) Error() string { return e.Word + ": " + e.Msg }

// Parse reads a schedule: five fields (minute, hour, day of month, month,
// day of week) separated by spaces or tabs, or one of @reboot, @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly — with the
// rules of Debian's cron (see the package doc). Leading and trailing
// white space is ignored. An error is an *Error, or says the text is not
// five fields; Parse never panics.
func Parse(expr string) (*Schedule, error) {
	if len(expr) > MaxLen {
		return nil, fmt.Errorf("cron expression is %d bytes long; at most %d", len(expr), MaxLen)
	}
	text := strings.TrimSpace(expr)
	if strings.ContainsAny(text, "\n\r\x00") {
		return nil, fmt.Errorf("cron expression %q holds a line break or NUL", expr)
	}
	if !strings.HasPrefix(text, "@") {
		if n := len(blankFields(text)); n != nFields {
			return nil, fmt.Errorf("cron expression %q has %d fields; want 5 (minute hour day-of-month month day-of-week)", expr, n)
		}
	}
	s, rest, err := ParseEntry(text)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("cron expression %q has more than a schedule", expr)
	}
	return s, nil
}

// ParseEntry reads the schedule at the start of a crontab entry, as
// entry.c's load_entry does after skipping the line's leading blanks: an
// @ word, or five fields. It returns the schedule and the rest of the
// line after the blanks that follow it (the command, or in a system
// crontab the user and the command). The fields and the rest are
// separated by spaces and tabs only, as cron separates them. An error is
// an *Error.
func ParseEntry(line string) (s *Schedule, rest string, err error) {
	line = strings.TrimLeft(line, " \t")
	if strings.HasPrefix(line, "@") {
		word, after := cutBlank(line[1:])
		s := &Schedule{expr: "@" + word}
		if word == "reboot" {
			s.reboot = true
			return s, after, nil
		}
		sub, ok := nickname(word)
		if !ok {
			return nil, "", &Error{"bad time specifier", fmt.Sprintf("@%s is not one of @reboot, @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly (lower case)", word)}
		}
		if err := s.parseFields(sub); err != nil {
			return nil, "", err
		}
		return s, after, nil
	}
	var words []string
	rest = line
	for f := 0; f < nFields; f++ {
		var w string
		w, rest = cutBlank(rest)
		words = append(words, w)
	}
	s = &Schedule{expr: strings.Join(words, " ")}
	if err := s.parseFields(s.expr); err != nil {
		return nil, "", err
	}
	return s, rest, nil
}

// blankFields splits on spaces and tabs, cron's blanks.
func blankFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
}

// cutBlank returns the first word of s (up to a space or tab) and what
// follows the blanks after it (Skip_Nonblanks, Skip_Blanks).
func cutBlank(s string) (word, rest string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// parseFields reads the five fields of text (separated by single blanks
// or more) and sets the star flags as load_entry does: from the first
// character of each field.
func (s *Schedule) parseFields(text string) error {
	rest := text
	for f := 0; f < nFields; f++ {
		var w string
		w, rest = cutBlank(rest)
		if err := s.parseField(f, w); err != nil {
			return err
		}
		star := strings.HasPrefix(w, "*")
		switch f {
		case fMinute:
			s.minStar = star
		case fHour:
			s.hourStar = star
		case fDom:
			s.domStar = star
		case fDow:
			s.dowStar = star
		}
	}
	return nil
}

// MustParse is Parse for constants in tests and examples: it panics on an
// error.
func MustParse(expr string) *Schedule {
	s, err := Parse(expr)
	if err != nil {
		panic(err)
	}
	return s
}

// parseField reads one field as entry.c's get_list does: ranges
// separated by commas; after the last one, anything up to the next blank
// is skipped (Skip_Nonblanks), so "1#2" is 1. An empty field (a line
// with fewer fields) is an error, as is any range get_range refuses.
func (s *Schedule) parseField(f int, w string) error {
	bad := func(format string, args ...any) error {
		return &Error{cronWords[f], fmt.Sprintf("%s field %q: ", fieldNames[f], w) + fmt.Sprintf(format, args...)}
	}
	if w == "" {
		return &Error{cronWords[f], fmt.Sprintf("the %s field is missing", fieldNames[f])}
	}
	for pos := 0; ; {
		it, next, msg := getRange(f, w, pos)
		if msg != "" {
			return bad("%s", msg)
		}
		for v := it.lo; v <= it.hi; v += it.step {
			if f == fDow && v == 7 {
				s.bits[f] |= 1
			} else {
				s.bits[f] |= 1 << uint(v)
			}
			if v > math.MaxInt-it.step {
				break
			}
		}
		if it.lo <= it.hi {
			if f == fDow && it.star {
				it.hi = 6 // 7 is Sunday again
			}
			s.items[f] = append(s.items[f], it)
		}
		if next < len(w) && w[next] == ',' {
			pos = next + 1
			continue
		}
		return nil
	}
}

// getRange reads one range of field f at w[pos:] as entry.c's get_range
// does: "*" or N or N-M, then "/S" unless it was a lone N. It returns the
// range, the index of the character that ended it, and why it is refused
// ("" when it is not).
func getRange(f int, w string, pos int) (it item, next int, msg string) {
	lo, hi := fieldMin[f], fieldMax[f]
	it.step = 1
	if pos < len(w) && w[pos] == '*' {
		it.lo, it.hi, it.star = lo, hi, true
		pos++
	} else {
		var m string
		if it.lo, pos, m = getNumber(f, w, pos, true); m != "" {
			return it, pos, m
		}
		if pos >= len(w) || w[pos] != '-' {
			if pos < len(w) && w[pos] == '/' {
				return it, pos, fmt.Sprintf("a step needs a range (N-M/S or */S); Debian's cron rejects N/S, write %d-%d/S", it.lo, hi)
			}
			if it.lo < lo || it.lo > hi {
				return it, pos, fmt.Sprintf("%d is out of range %d-%d", it.lo, lo, hi)
			}
			it.hi = it.lo
			return it, pos, ""
		}
		if it.hi, pos, m = getNumber(f, w, pos+1, true); m != "" {
			return it, pos, m
		}
	}
	if pos < len(w) && w[pos] == '/' {
		var m string
		if it.step, pos, m = getNumber(f, w, pos+1, false); m != "" {
			return it, pos, "step: " + m
		}
		if it.step <= 0 {
			return it, pos, fmt.Sprintf("step %d is not positive", it.step)
		}
	}
	for _, v := range []int{it.lo, it.hi} {
		if v < lo || v > hi {
			return it, pos, fmt.Sprintf("%d is out of range %d-%d", v, lo, hi)
		}
	}
	return it, pos, ""
}

// getNumber reads a number or (if names) a name of field f at w[pos:], as
// entry.c's get_number does: the letters and digits there, a name of the
// field (case-insensitive) or else all digits, read as C's atoi. It
// returns the value, the index after the word, and why it is refused.
func getNumber(f int, w string, pos int, names bool) (n, next int, msg string) {
	end := pos
	digits := true
	for end < len(w) && isAlnum(w[end]) {
		if w[end] < '0' || w[end] > '9' {
			digits = false
		}
		end++
	}
	word := w[pos:end]
	switch {
	case word == "":
		return 0, end, "a number is missing" + at(w, pos)
	case len(word) >= maxNumber:
		return 0, end, fmt.Sprintf("a word of %d characters", len(word))
	}
	if names {
		var list []string
		base := 0
		switch f {
		case fMonth:
			list, base = monthNames, 1
		case fDow:
			list = dowNames
		}
		for i, name := range list {
			if strings.EqualFold(word, name) {
				return i + base, end, ""
			}
		}
	}
	if !digits {
		what := "a number"
		if names && (f == fMonth || f == fDow) {
			what = "a number or a " + fieldNames[f] + " name"
		}
		return 0, end, fmt.Sprintf("%q is not %s", word, what)
	}
	return atoi(word), end, ""
}

// at says where in w a number was missing, for messages.
func at(w string, pos int) string {
	if pos >= len(w) {
		return " at the end"
	}
	return fmt.Sprintf(" before %q", w[pos:])
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// atoi reads a string of digits as glibc's atoi does on a 64-bit Linux:
// strtol (which stops at LONG_MAX) cut to a 32-bit int, so that a huge
// number is refused or accepted exactly as cron does.
func atoi(digits string) int {
	var v uint64
	for i := 0; i < len(digits); i++ {
		d := uint64(digits[i] - '0')
		if v > (math.MaxInt64-d)/10 {
			v = math.MaxInt64
			break
		}
		v = v*10 + d
	}
	return int(int32(uint32(v)))
}

// String returns the expression as it was given (trimmed).
func (s *Schedule) String() string { return s.expr }

// Reboot reports whether the schedule is @reboot: it fires once when cron
// starts, never at a time.
func (s *Schedule) Reboot() bool { return s.reboot }

func (s *Schedule) has(f, v int) bool { return s.bits[f]&(1<<uint(v)) != 0 }

// dayMatches applies the day-of-month / day-of-week rule of Vixie cron:
// if either field begins with '*', both must match, else either.
func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.has(fDom, t.Day())
	dow := s.has(fDow, int(t.Weekday()))
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Match reports whether the schedule fires in the minute of t, read in
// t's own location. @reboot matches no time.
func (s *Schedule) Match(t time.Time) bool {
	if s.reboot {
		return false
	}
	return s.has(fMinute, t.Minute()) && s.has(fHour, t.Hour()) && s.has(fMonth, int(t.Month())) && s.dayMatches(t)
}

// searchYears bounds Next: the Gregorian calendar repeats every 400
// years, so a schedule that has not fired in 400 years never does. The
// longest real wait is a 29 February on a given weekday ("0 0 29 2 sun"):
// 28 years, or 40 across a skipped leap year such as 2100. A schedule
// whose days never exist ("0 0 31 2 *") is known at once (possible), not
// searched for.
const searchYears = 400

// maxCatchUp bounds the clock changes cron treats as daylight saving
// changes (Vixie cron's "medium" jumps: more than 5 minutes, less than 3
// hours); a larger change is a clock reset, after which it runs nothing
// to catch up and repeats nothing.
const maxCatchUp = 3 * time.Hour

// fixedTime reports whether cron treats the schedule as a fixed-time job:
// neither its minute nor its hour field begins with '*' (Vixie cron's
// MIN_STAR and HR_STAR flags; @hourly is "0 * * * *", a wildcard job).
func (s *Schedule) fixedTime() bool { return !s.minStar && !s.hourStar }

// possible reports whether the schedule ever fires: its minute, hour and
// month fields name a value (a backwards range names none), and some day
// of some month matches. With the AND rule (a day field begins with '*')
// a day of month must exist in a month of the schedule (29 February
// counts: a weekday too comes round) and a weekday must be named; with
// the OR rule a named weekday is enough, else a day of month must exist.
func (s *Schedule) possible() bool {
	if s.bits[fMinute] == 0 || s.bits[fHour] == 0 || s.bits[fMonth] == 0 {
		return false
	}
	and := s.domStar || s.dowStar
	if and && s.bits[fDow] == 0 {
		return false
	}
	if !and && s.bits[fDow] != 0 {
		return true
	}
	maxDay := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if !s.has(fMonth, m) {
			continue
		}
		for d := 1; d <= maxDay[m]; d++ {
			if s.has(fDom, d) {
				return true
			}
		}
	}
	return false
}

// Next returns the first minute strictly after after at which cron runs
// the schedule, reading the fields as wall-clock time in loc (nil:
// time.Local) — cron's own zone, which is not necessarily the one the
// result is shown in. It returns the zero time for @reboot and for a
// schedule that never fires.
//
// Around daylight-saving changes it follows Vixie cron (Debian's cron)
// and cronie: when the clock jumps forward, a fixed-time job (minute and
// hour fields not beginning with '*') whose time was skipped runs right
// after the jump (at 03:00 for 02:30 when 02:00 becomes 03:00), and a
// wildcard job's skipped minutes are lost; when the clock goes back, a
// wildcard job runs again in the repeated hour and a fixed-time job does
// not. Clock changes of 3 hours or more are not daylight saving for cron:
// nothing is caught up or skipped then.
func (s *Schedule) Next(after time.Time, loc *time.Location) time.Time {
	if s.reboot || !s.possible() {
		return time.Time{}
	}
	if loc == nil {
		loc = time.Local
	}
	a := after.In(loc)
	// The wall clock is walked in UTC (no daylight saving there), one
	// zone period (a stretch of constant offset) at a time.
	wallAfter := time.Date(a.Year(), a.Month(), a.Day(), a.Hour(), a.Minute(), 0, 0, time.UTC)
	limit := wallAfter.AddDate(searchYears, 0, 0)
	fixed := s.fixedTime()
	t := a // the first instant of the period looked at (after, at first)
	for first := true; ; first = false {
		_, off := t.Zone()
		offset := time.Duration(off) * time.Second
		start, end := t.ZoneBounds()
		lo := wallAfter.Add(time.Minute) // after's own offset: this period's
		if !first {
			lo = ceilMinute(t.UTC().Add(offset))
		}
		if !start.IsZero() && (first || start.Equal(t)) {
			_, prev := start.Add(-time.Nanosecond).Zone()
			jump := offset - time.Duration(prev)*time.Second
			startWall := start.UTC().Add(offset)
			switch {
			case !first && jump > 0 && jump < maxCatchUp && fixed:
				// The minutes [start+prev, start+off) did not exist:
				// cron runs the fixed-time jobs it skipped at once.
				if w := s.wallSearch(startWall.Add(-jump), startWall); !w.IsZero() {
					return start.In(loc)
				}
			case jump < 0 && -jump < maxCatchUp && fixed:
				// The minutes up to start+prev are repeated: cron
				// does not run fixed-time jobs a second time.
				if r := startWall.Add(-jump); r.After(lo) {
					lo = ceilMinute(r)
				}
			}
		}
		if !end.IsZero() && !end.After(t) {
			// Go (1.26) can report a year's end that is already past
			// for a leap year beyond the zone's table (2092-12-30 19:00
			// in New York): no offset changes there; step a day.
			end = t.Add(24 * time.Hour)
		}
		hi := limit
		if !end.IsZero() {
			if e := end.UTC().Add(offset); e.Before(hi) {
				hi = e
			}
		}
		if w := s.wallSearch(lo, hi); !w.IsZero() {
			return w.Add(-offset).In(loc)
		}
		if end.IsZero() || !hi.Before(limit) {
			return time.Time{}
		}
		t = end.In(loc)
	}
}

// ceilMinute rounds a wall clock (in UTC) up to a whole minute.
func ceilMinute(w time.Time) time.Time {
	if m := w.Truncate(time.Minute); m.Before(w) {
		return m.Add(time.Minute)
	}
	return w
}

// wallSearch returns the first wall-clock minute in [from, to) (both read
// as wall clocks, in UTC) the schedule matches, or the zero time.
func (s *Schedule) wallSearch(from, to time.Time) time.Time {
	w := from
	for w.Before(to) {
		switch {
		case !s.has(fMonth, int(w.Month())):
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case !s.has(fHour, w.Hour()):
			w = w.Truncate(time.Hour).Add(time.Hour)
		case !s.has(fMinute, w.Minute()):
			w = w.Add(time.Minute)
		default:
			return w
		}
	}
	return time.Time{}
}
