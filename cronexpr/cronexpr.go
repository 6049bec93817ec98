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

// searchYears bounds Next: a schedule that fires at all fires within 8
// years (29 February on a given weekday, or across a skipped leap year
// like 2100), so one that has not fired in this many never does
// ("0 0 30 2 *").
const searchYears = 9

// Next returns the first minute strictly after after at which the
// schedule fires, reading the fields as wall-clock time in loc (nil:
// time.Local) — cron's own zone, which is not necessarily the one the
// result is shown in. It returns the zero time for @reboot and for a
// schedule that never fires. A wall-clock minute that does not exist in
// loc (skipped by a daylight-saving change) is passed over; cron daemons
// differ on those.
func (s *Schedule) Next(after time.Time, loc *time.Location) time.Time {
	if s.reboot {
		return time.Time{}
	}
	if loc == nil {
		loc = time.Local
	}
	a := after.In(loc)
	// Walk the wall clock in UTC (no daylight saving there), from the
	// minute after after's.
	w := time.Date(a.Year(), a.Month(), a.Day(), a.Hour(), a.Minute(), 0, 0, time.UTC).Add(time.Minute)
	limit := w.AddDate(searchYears, 0, 0)
	for w.Before(limit) {
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
			t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, loc)
			if t.Hour() == w.Hour() && t.Minute() == w.Minute() && t.After(after) {
				return t
			}
			w = w.Add(time.Minute)
		}
	}
	return time.Time{}
}
