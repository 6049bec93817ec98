package cronexpr

import (
	"fmt"
	"strconv"
	"strings"
)

var monthWords = []string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dowWords = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// Describe says the schedule in English words, for people: "every 30
// minutes from :15", "every 4 hours from 00:00", "daily at 03:00",
// "at 09:30 on Monday through Friday", "at boot". Times are wall-clock
// times of cron's zone. The words are meant to be read, not parsed; they
// may change between versions.
func (s *Schedule) Describe() string {
	if s.reboot {
		return "at boot"
	}
	if !s.possible() {
		return "never (no date matches every field)"
	}
	t := s.timeWords()
	d := s.dayWords()
	if d == "" && strings.HasPrefix(t, "at ") && !strings.Contains(t, " past ") {
		t = "daily " + t
	}
	if !s.all(fMonth) {
		d += " in " + s.fieldText(fMonth)
	}
	return t + d
}

// count returns how many values of field f match.
func (s *Schedule) count(f int) int {
	n := 0
	for b := s.bits[f]; b != 0; b &= b - 1 {
		n++
	}
	return n
}

func (s *Schedule) values(f int) []int {
	var out []int
	for v := fieldMin[f]; v <= fieldMax[f] && v < 64; v++ {
		if s.has(f, v) {
			out = append(out, v)
		}
	}
	return out
}

// all reports whether every value of field f matches.
func (s *Schedule) all(f int) bool {
	n := fieldMax[f] - fieldMin[f] + 1
	if f == fDow {
		n = 7
	}
	return s.count(f) == n
}

// oneStep returns the field's single stepped item, if "every N" says it:
// it names three values or more, or two that the step spaces evenly
// round the clock ("15-59/30"). "*/61" is minute 0 only, and "*/32"
// minutes 0 and 32, which a list says better.
func (s *Schedule) oneStep(f int) (item, bool) {
	if len(s.items[f]) != 1 || s.items[f][0].step <= 1 {
		return item{}, false
	}
	it, n := s.items[f][0], s.count(f)
	if n > 2 || n == 2 && (fieldMax[f]-fieldMin[f]+1)%it.step == 0 {
		return it, true
	}
	return item{}, false
}

func two(n int) string { return fmt.Sprintf("%02d", n) }

func (s *Schedule) timeWords() string {
	minAll, hourAll := s.all(fMinute), s.all(fHour)
	mins := s.values(fMinute)
	switch {
	case minAll && hourAll:
		return "every minute"
	case minAll:
		return "every minute during " + s.hourWords()
	}
	if st, ok := s.oneStep(fMinute); ok {
		w := "every " + plural(st.step, "minute")
		if st.lo != 0 {
			w += " from :" + two(st.lo)
		}
		if last := mins[len(mins)-1]; st.hi < 59 && last+st.step <= 59 {
			w += " to :" + two(st.hi)
		}
		if !hourAll {
			w += " during " + s.hourWords()
		}
		return w
	}
	minText := joinWords(mapInts(mins, func(m int) string { return ":" + two(m) }))
	if hourAll {
		if len(mins) > 8 {
			return "every hour at minutes " + s.fieldText(fMinute)
		}
		return "hourly at " + minText
	}
	hours := s.values(fHour)
	if st, ok := s.oneStep(fHour); ok && len(mins) == 1 {
		w := "every " + plural(st.step, "hour") + " from " + two(st.lo) + ":" + two(mins[0])
		if last := hours[len(hours)-1]; st.hi < 23 && last+st.step <= 23 {
			w += " to " + two(st.hi) + ":" + two(mins[0])
		}
		return w
	}
	if len(mins)*len(hours) <= 6 {
		var times []string
		for _, h := range hours {
			for _, m := range mins {
				times = append(times, two(h)+":"+two(m))
			}
		}
		return "at " + joinWords(times)
	}
	if len(mins) <= 8 {
		return "at " + minText + " past " + s.hourWords()
	}
	return "at minutes " + s.fieldText(fMinute) + " past " + s.hourWords()
}

func (s *Schedule) hourWords() string {
	if s.count(fHour) == 1 {
		return "hour " + two(s.values(fHour)[0])
	}
	if st, ok := s.oneStep(fHour); ok {
		w := "every " + ordinal(st.step) + " hour"
		if st.lo != 0 {
			w += " from " + two(st.lo) + ":00"
		}
		if st.hi < 23 {
			w += " to " + two(st.hi) + ":59"
		}
		return w
	}
	return "hours " + s.fieldText(fHour)
}

// dayWords says the day fields, with a leading space, or "" for every
// day.
func (s *Schedule) dayWords() string {
	domAll, dowAll := s.all(fDom), s.all(fDow)
	var w string
	if s.domStar || s.dowStar {
		// AND: a day must match both fields (Vixie's DOM_STAR rule).
		switch {
		case domAll && dowAll:
		case dowAll:
			w = " " + s.domWords()
		case domAll:
			w = " " + s.dowWords()
		default:
			w = " " + s.domWords() + " if it is a " + s.fieldText(fDow)
		}
	} else if !domAll && !dowAll {
		// OR: either field's days (crontab(5)); a backwards range
		// ("fri-sun") names none.
		switch {
		case s.count(fDow) == 0:
			w = " " + s.domWords()
		case s.count(fDom) == 0:
			w = " " + s.dowWords()
		default:
			w = " " + s.domWords() + " and " + s.dowWords()
		}
	}
	return w
}

func (s *Schedule) domWords() string {
	if s.count(fDom) == 1 {
		return "on day " + strconv.Itoa(s.values(fDom)[0]) + " of the month"
	}
	return "on days " + s.fieldText(fDom) + " of the month"
}

func (s *Schedule) dowWords() string {
	return "on " + s.fieldText(fDow)
}

// fieldText says a field's list as written: items joined with commas and
// "and", ranges with "through" for names, steps as "every Nth".
func (s *Schedule) fieldText(f int) string {
	name := func(v int) string {
		switch f {
		case fMonth:
			return monthWords[v]
		case fDow:
			return dowWords[v]
		case fHour:
			return two(v) + ":00"
		}
		return strconv.Itoa(v)
	}
	var parts []string
	for _, it := range s.items[f] {
		hi := it.hi
		if f == fDow && it.star {
			hi = 6
		}
		switch {
		case it.step > 1:
			p := "every " + ordinal(it.step)
			if !it.star || it.lo != fieldMin[f] {
				p += " from " + name(it.lo)
			}
			if !it.star && hi != fieldMax[f] && !(f == fDow && hi == 6) {
				p += " to " + name(hi)
			}
			parts = append(parts, p)
		case it.lo == hi:
			parts = append(parts, name(it.lo))
		case it.star:
			parts = append(parts, "any")
		default:
			sep := " through "
			if f == fMinute || f == fDom {
				sep = "-"
			}
			if f == fHour {
				parts = append(parts, name(it.lo)+"-"+two(hi)+":59")
				continue
			}
			parts = append(parts, name(it.lo)+sep+name(hi))
		}
	}
	return joinWords(parts)
}

func joinWords(w []string) string {
	switch len(w) {
	case 0:
		return ""
	case 1:
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

func mapInts(v []int, f func(int) string) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func ordinal(n int) string {
	suf := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suf = "st"
	case n%10 == 2:
		suf = "nd"
	case n%10 == 3:
		suf = "rd"
	}
	return strconv.Itoa(n) + suf
}
