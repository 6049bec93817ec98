// Package cronexpr reads the schedule of a crontab line — five fields or
// an @ nickname — as Vixie cron (Debian's cron) and cronie read it: it
// says it in English words and computes the next time it fires.
//
// It is small on purpose: it knows the standard syntax (lists, ranges,
// steps, month and day names, 7 for Sunday) and the day-of-month /
// day-of-week OR rule, and nothing else (no seconds field, no L, W, # or
// ? of Quartz). Whatever it cannot read is an error, so a caller can show
// the raw text instead of a wrong reading.
package cronexpr

import (
	"errors"
	"fmt"
	"strconv"
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

// bounds of each field; day of week accepts 7 (Sunday) and stores it as 0.
var fieldMin = [nFields]int{0, 0, 1, 1, 0}
var fieldMax = [nFields]int{59, 23, 31, 12, 7}

var monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var dowNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// item is one element of a field's list: lo-hi/step. A lone number N is
// N-N/1, "*" is min-max with star set; "N/S" (cronie, systemd) is N-max/S.
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

var nicknames = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads a schedule: five whitespace-separated fields (minute, hour,
// day of month, month, day of week) or one of @reboot, @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly (case-
// insensitive, as Vixie cron). Names (jan, mon...) are case-insensitive and
// allowed wherever a number is. An error names the field and says what is
// wrong; Parse never panics.
func Parse(expr string) (*Schedule, error) {
	if len(expr) > MaxLen {
		return nil, fmt.Errorf("cron expression is %d bytes long; at most %d", len(expr), MaxLen)
	}
	s := &Schedule{expr: strings.TrimSpace(expr)}
	text := s.expr
	if strings.HasPrefix(text, "@") {
		low := strings.ToLower(text)
		if low == "@reboot" {
			s.reboot = true
			return s, nil
		}
		sub, ok := nicknames[low]
		if !ok {
			return nil, fmt.Errorf("unknown cron nickname %q", text)
		}
		text = sub
	}
	fields := strings.Fields(text)
	if len(fields) != nFields {
		return nil, fmt.Errorf("cron expression %q has %d fields; want 5 (minute hour day-of-month month day-of-week)", expr, len(fields))
	}
	for f, txt := range fields {
		if err := s.parseField(f, txt); err != nil {
			return nil, err
		}
	}
	s.domStar = strings.HasPrefix(fields[fDom], "*")
	s.dowStar = strings.HasPrefix(fields[fDow], "*")
	s.minStar = strings.HasPrefix(fields[fMinute], "*")
	s.hourStar = strings.HasPrefix(fields[fHour], "*")
	return s, nil
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

func (s *Schedule) parseField(f int, txt string) error {
	lo, hi := fieldMin[f], fieldMax[f]
	for _, part := range strings.Split(txt, ",") {
		it, err := parseItem(f, part, lo, hi)
		if err != nil {
			return fmt.Errorf("cron %s field %q: %v", fieldNames[f], txt, err)
		}
		for v := it.lo; v <= it.hi; v += it.step {
			if f == fDow && v == 7 {
				s.bits[f] |= 1
			} else {
				s.bits[f] |= 1 << uint(v)
			}
		}
		s.items[f] = append(s.items[f], it)
	}
	return nil
}

func parseItem(f int, part string, lo, hi int) (item, error) {
	if part == "" {
		return item{}, errors.New("empty list element")
	}
	rng, stepText, hasStep := strings.Cut(part, "/")
	it := item{step: 1}
	if rng == "*" {
		it.lo, it.hi, it.star = lo, hi, true
		if f == fDow {
			it.hi = 6 // 7 is Sunday again
		}
	} else {
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if it.lo, err = value(f, a, lo, hi); err != nil {
			return it, err
		}
		it.hi = it.lo
		if isRange {
			if it.hi, err = value(f, b, lo, hi); err != nil {
				return it, err
			}
			if it.hi < it.lo {
				return it, fmt.Errorf("range %s is backwards", rng)
			}
		} else if hasStep {
			// N/S: from N to the end, every S (cronie and systemd;
			// Vixie rejects it).
			it.hi = hi
			if f == fDow {
				it.hi = 6
			}
		}
	}
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n <= 0 || stepText[0] == '+' {
			return it, fmt.Errorf("step %q is not a positive number", stepText)
		}
		if n > hi-lo+1 && n > 1 {
			return it, fmt.Errorf("step %d is larger than the field (%d-%d)", n, lo, hi)
		}
		it.step = n
	}
	return it, nil
}

// value reads one number or name of field f.
func value(f int, s string, lo, hi int) (int, error) {
	if s == "" {
		return 0, errors.New("missing number")
	}
	if c := s[0]; c < '0' || c > '9' {
		var names []string
		base := 0
		switch f {
		case fMonth:
			names, base = monthNames, 1
		case fDow:
			names = dowNames
		default:
			return 0, fmt.Errorf("%q is not a number", s)
		}
		for i, n := range names {
			if strings.EqualFold(s, n) {
				return i + base, nil
			}
		}
		return 0, fmt.Errorf("%q is not a %s name", s, fieldNames[f])
	}
	if len(s) > 3 {
		return 0, fmt.Errorf("%s is out of range %d-%d", s, lo, hi)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, lo, hi)
	}
	return n, nil
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

// possible reports whether some day of some month the schedule names
// exists: with the AND rule (a day field begins with '*') a day of month
// must exist in a month of the schedule (29 February counts: a weekday
// too comes round); with the OR rule any weekday does.
func (s *Schedule) possible() bool {
	if !s.domStar && !s.dowStar && s.bits[fDow] != 0 {
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
