package cronexpr

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDescribe(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"* * * * *", "every minute"},
		{"*/5 * * * *", "every 5 minutes"},
		{"15-59/30 * * * *", "every 30 minutes from :15"},
		{"0-29/10 * * * *", "every 10 minutes to :29"},
		{"30,45 * * * *", "hourly at :30 and :45"},
		{"0 * * * *", "hourly at :00"},
		{"@hourly", "hourly at :00"},
		{"0 */4 * * *", "every 4 hours from 00:00"},
		{"30 2-23/6 * * *", "every 6 hours from 02:30"},
		{"0 3 * * *", "daily at 03:00"},
		{"@daily", "daily at 00:00"},
		{"@midnight", "daily at 00:00"},
		{"0 3,15 * * *", "daily at 03:00 and 15:00"},
		{"30 9 * * 1-5", "at 09:30 on Monday through Friday"},
		{"30 9 * * mon-fri", "at 09:30 on Monday through Friday"},
		{"0 0 * * 0", "at 00:00 on Sunday"},
		{"0 0 * * 7", "at 00:00 on Sunday"},
		{"@weekly", "at 00:00 on Sunday"},
		{"0 0 1 * *", "at 00:00 on day 1 of the month"},
		{"@monthly", "at 00:00 on day 1 of the month"},
		{"0 0 1 1 *", "at 00:00 on day 1 of the month in January"},
		{"@yearly", "at 00:00 on day 1 of the month in January"},
		{"0 0 1,15 * 1", "at 00:00 on days 1 and 15 of the month and on Monday"},
		{"0 0 */2 * 1", "at 00:00 on days every 2nd of the month if it is a Monday"},
		{"* 9-17 * * *", "every minute during hours 09:00-17:59"},
		{"*/15 9-17 * * 1-5", "every 15 minutes during hours 09:00-17:59 on Monday through Friday"},
		{"0 0 * jun-aug *", "daily at 00:00 in June through August"},
		{"5 4 * * sun", "at 04:05 on Sunday"},
		{"1,2,3,4,5,6,7,8,9 * * * *", "every hour at minutes 1, 2, 3, 4, 5, 6, 7, 8 and 9"},
		{"@reboot", "at boot"},
		{"0 1,2,3,4,5,6,7 * * *", "at :00 past hours 01:00, 02:00, 03:00, 04:00, 05:00, 06:00 and 07:00"},
		// What Debian's cron accepts that other readers do not.
		{"*/61 * * * *", "hourly at :00"},
		{"*/32 * * * *", "hourly at :00 and :32"},
		{"0 0 * * 1#2", "at 00:00 on Monday"},
		{"0 0 * * fri-sun", "never (no date matches every field)"},
		{"0 0 1 * fri-sun", "at 00:00 on day 1 of the month"},
		{"0 0 5-1 * mon", "at 00:00 on Monday"},
		{"5-1 * * * *", "never (no date matches every field)"},
		{"*x 3 * * *", "every minute during hour 03"},
	} {
		s, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if got := s.Describe(); got != c.want {
			t.Errorf("Describe(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"", "has 0 fields"},
		{"* * * *", "has 4 fields"},
		{"* * * * * *", "has 6 fields"},
		{"60 * * * *", "bad minute: minute field \"60\": 60 is out of range 0-59"},
		{"* 24 * * *", "bad hour: hour field \"24\": 24 is out of range 0-23"},
		{"* * 0 * *", "bad day-of-month: day of month field \"0\": 0 is out of range 1-31"},
		{"* * * 13 *", "bad month: month field \"13\": 13 is out of range 1-12"},
		{"* * * * 8", "bad day-of-week: day of week field \"8\": 8 is out of range 0-7"},
		{"*/0 * * * *", "step 0 is not positive"},
		{"*/-1 * * * *", "step: a number is missing before \"-1\""},
		{"*/+1 * * * *", "step: a number is missing"},
		{"1,,2 * * * *", "a number is missing before \",2\""},
		{"1, * * * *", "a number is missing at the end"},
		{"x * * * *", `"x" is not a number`},
		{"5x * * * *", `"5x" is not a number`},
		{"* * * foo *", "not a number or a month name"},
		{"* * * * funday", "not a number or a day of week name"},
		{"@often", "bad time specifier: @often is not one of"},
		{"99999999999999999999 * * * *", "-1 is out of range 0-59"},
		{strings.Repeat("1", MaxLen+1), "bytes long"},
		{"*/5 * * * * /usr/bin/true", "has 6 fields"},
		{"* * * * *\n", ""},
		{"1-\n * * * *", "line break"},
		// Debian's cron rejects these, which cronie (and this package
		// before) accept: a step on a lone number, an @ word not in
		// lower case.
		{"5/15 * * * *", "bad minute: minute field \"5/15\": a step needs a range (N-M/S or */S); Debian's cron rejects N/S, write 5-59/S"},
		{"0 1/2 * * *", "bad hour: hour field \"1/2\""},
		{"@Daily", "bad time specifier"},
		{"@HOURLY", "bad time specifier"},
		{"* * * jan/2 *", "bad month"},
		{"* * * * " + strings.Repeat("9", 1000), "bad day-of-week: day of week field \"9999"},
	} {
		_, err := Parse(c.expr)
		if c.want == "" {
			if err != nil {
				t.Errorf("Parse(%q) = %v, want no error", c.expr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.expr, err, c.want)
		}
	}
}

// TestParseDebianCases: what Debian's cron accepts and how it reads it,
// for the cases other readers get wrong (package doc).
func TestParseDebianCases(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC) // a Monday
	for _, c := range []struct {
		expr  string
		match []time.Time // times it matches
		never []time.Time // times it does not
	}{
		{"*/61 * * * *", []time.Time{at}, []time.Time{at.Add(time.Minute), at.Add(61 * time.Minute)}},
		{"*/32 * * * *", []time.Time{at, at.Add(32 * time.Minute)}, []time.Time{at.Add(64 * time.Minute)}},
		{"0 0 * * 1#2", []time.Time{at, at.AddDate(0, 0, 7)}, []time.Time{at.AddDate(0, 0, 1)}},
		{"0 0 * * fri-sun", nil, []time.Time{at, at.AddDate(0, 0, 4), at.AddDate(0, 0, 6)}},
		{"0 0 * * mon-7", []time.Time{at, at.AddDate(0, 0, 6)}, nil},
		{"4294967296 * * * *", []time.Time{at}, []time.Time{at.Add(time.Minute)}}, // atoi: (int)4294967296 is 0
		{"* * * * *x", []time.Time{at}, nil},
		{"0 0 1 * fri-sun", []time.Time{at.AddDate(0, 0, -6)}, []time.Time{at.AddDate(0, 0, -3)}},
	} {
		s, err := Parse(c.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v; Debian's cron accepts it", c.expr, err)
			continue
		}
		for _, m := range c.match {
			if !s.Match(m) {
				t.Errorf("%q does not match %v", c.expr, m)
			}
		}
		for _, m := range c.never {
			if s.Match(m) {
				t.Errorf("%q matches %v", c.expr, m)
			}
		}
	}
	if n := MustParse("0 0 * * fri-sun").Next(at, time.UTC); !n.IsZero() {
		t.Errorf("fri-sun with '*' days: Next = %v, want never", n)
	}
}

// TestParseEntry: the rest of a line after the schedule, as cron splits
// it (spaces and tabs only).
func TestParseEntry(t *testing.T) {
	for _, c := range []struct{ line, expr, rest string }{
		{"*/5 * * * * root cron-gate x -- true", "*/5 * * * *", "root cron-gate x -- true"},
		{"  0\t1 * *  *\t\tcmd  a ", "0 1 * * *", "cmd  a "},
		{"@daily  cmd", "@daily", "cmd"},
		{"@reboot", "@reboot", ""},
		{"* * * * *", "* * * * *", ""},
	} {
		s, rest, err := ParseEntry(c.line)
		if err != nil || s.String() != c.expr || rest != c.rest {
			t.Errorf("ParseEntry(%q) = %v, %q, %v; want %q, %q", c.line, s, rest, err, c.expr, c.rest)
		}
	}
	if _, _, err := ParseEntry("* * * *"); err == nil || err.(*Error).Word != "bad day-of-week" {
		t.Errorf(`ParseEntry("* * * *") = %v, want bad day-of-week (cron's word for the missing field)`, err)
	}
}

func TestNext(t *testing.T) {
	seoul, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	at := func(loc *time.Location, s string) time.Time {
		t.Helper()
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, c := range []struct {
		expr  string
		loc   *time.Location
		after string
		want  string // "" = never
	}{
		{"15-59/30 * * * *", seoul, "2026-11-29 20:10", "2026-11-29 20:15"},
		{"15-59/30 * * * *", seoul, "2026-11-29 20:15", "2026-11-29 20:45"},
		{"15-59/30 * * * *", seoul, "2026-11-29 23:50", "2026-11-30 00:15"},
		{"*/61 * * * *", seoul, "2026-11-29 23:50", "2026-11-30 00:00"},
		{"*/61 * * * *", seoul, "2026-11-30 00:00", "2026-11-30 01:00"},
		{"0 0 * * fri-sun", seoul, "2026-11-29 23:50", ""},
		{"5-1 * * * *", seoul, "2026-11-29 23:50", ""},
		{"0 */4 * * *", seoul, "2026-11-29 21:00", "2026-11-30 00:00"},
		{"30 9 * * 1-5", seoul, "2026-11-27 10:00", "2026-11-30 09:30"}, // Friday -> Monday
		{"0 0 29 2 *", seoul, "2026-03-01 00:00", "2028-02-29 00:00"},
		{"0 0 29 2 *", seoul, "2097-03-01 00:00", "2104-02-29 00:00"}, // 2100 is not a leap year
		{"0 0 30 2 *", seoul, "2026-01-01 00:00", ""},
		{"0 0 31 4 *", seoul, "2026-01-01 00:00", ""},
		// OR rule: the 13th or any Friday.
		{"0 0 13 * 5", seoul, "2026-11-01 00:00", "2026-11-06 00:00"},
		{"0 0 13 * 5", seoul, "2026-11-10 00:00", "2026-11-13 00:00"},
		// AND rule: "*/2" starts with '*': odd days that are Mondays.
		{"0 0 */2 * 1", seoul, "2026-11-01 00:00", "2026-11-09 00:00"},
		{"0 0 1 1 *", seoul, "2026-12-31 23:59", "2027-01-01 00:00"},
		// Daylight saving (New York, 2026-03-08 02:00 -> 03:00): 02:30
		// does not exist that day; cron runs it right after the jump
		// (TestNextDST has the rest).
		{"30 2 * * *", ny, "2026-03-07 03:00", "2026-03-08 03:00"},
		{"30 2 * * *", ny, "2026-03-08 03:00", "2026-03-09 02:30"},
		// The longest wait: 29 February on a Sunday ("*/7" is 0 only,
		// and begins with '*': the AND rule), 27 years away.
		{"0 0 29 2 */7", seoul, "2033-01-01 00:00", "2060-02-29 00:00"},
		// 40 years, across 2100, which is not a leap year.
		{"0 0 29 2 */7", seoul, "2089-01-01 00:00", "2128-02-29 00:00"},
		// The same through New York's daylight saving, past its table
		// (Go's ZoneBounds reports a year end already past in 2092).
		{"0 0 29 2 */7", ny, "2089-01-01 00:00", "2128-02-29 00:00"},
		{"0 0 31 2 *", seoul, "2026-01-01 00:00", ""},
		{"0 0 30-31 2 mon", seoul, "2026-01-01 00:00", "2026-02-02 00:00"}, // OR rule: a Monday in February
		{"0 0 30,31 2,4 *", seoul, "2026-01-01 00:00", "2026-04-30 00:00"},
		{"0 0 31 2,4,6,9,11 *", seoul, "2026-01-01 00:00", ""},
		{"@reboot", seoul, "2026-01-01 00:00", ""},
	} {
		s := MustParse(c.expr)
		got := s.Next(at(c.loc, c.after), c.loc)
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%q after %s: %v, want never", c.expr, c.after, got)
			}
			continue
		}
		if want := at(c.loc, c.want); !got.Equal(want) {
			t.Errorf("%q after %s: %v, want %v", c.expr, c.after, got, want)
		}
	}
}

// TestNextBruteForce checks Next against a minute-by-minute walk with
// Match for a set of schedules.
func TestNextBruteForce(t *testing.T) {
	loc := time.UTC
	start := time.Date(2026, 11, 29, 7, 3, 0, 0, loc)
	for _, expr := range []string{"*/7 * * * *", "5 */3 * * *", "0 12 1,15 * wed", "0 0 */3 * sat", "10-20/5 8-9 * feb-mar *", "0 0 * * *", "59 23 31 12 *"} {
		s := MustParse(expr)
		after := start
		for i := 0; i < 5; i++ {
			got := s.Next(after, loc)
			want := time.Time{}
			for m := after.Truncate(time.Minute).Add(time.Minute); m.Before(after.AddDate(1, 1, 0)); m = m.Add(time.Minute) {
				if s.Match(m) {
					want = m
					break
				}
			}
			if !got.Equal(want) {
				t.Fatalf("%q after %v: Next %v, brute force %v", expr, after, got, want)
			}
			after = got
		}
	}
}

func ExampleSchedule_Describe() {
	for _, e := range []string{"15-59/30 * * * *", "0 */4 * * *", "30 9 * * 1-5"} {
		fmt.Println(MustParse(e).Describe())
	}
	// Output:
	// every 30 minutes from :15
	// every 4 hours from 00:00
	// at 09:30 on Monday through Friday
}

// FuzzParse: Parse never panics on outside input; what it accepts can be
// described, and Next returns a later time the schedule matches.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "15/30 * * * *", "*/61 * * * *", "0 0 * * fri-sun", "0 0 * * 1#2", "@Daily", "0 */4 * * *", "@daily", "@reboot", "30 9 1,15 jan-mar mon-fri", "0 0 */2 * 1", "1-5/2,7 * * * 7", "bad", ""} {
		f.Add(s)
	}
	after := time.Date(2026, 11, 29, 11, 15, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := Parse(expr)
		if err != nil {
			if s != nil {
				t.Fatal("a schedule and an error")
			}
			return
		}
		if s.Describe() == "" {
			t.Fatalf("%q: empty description", expr)
		}
		next := s.Next(after, time.UTC)
		if next.IsZero() {
			return
		}
		if !next.After(after) || !s.Match(next) || next.Second() != 0 {
			t.Fatalf("%q: Next = %v (after %v, match %v)", expr, next, after, s.Match(next))
		}
	})
}

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	return loc
}

// TestNextDST: around daylight-saving changes Next says what Vixie cron
// and cronie do: a fixed-time job skipped by a jump forward runs right
// after the jump, a wildcard one (minute or hour field beginning with
// '*') does not; in the repeated hour of a jump back a wildcard job runs
// again and a fixed-time one does not.
func TestNextDST(t *testing.T) {
	ny := zone(t, "America/New_York")
	lhi := zone(t, "Australia/Lord_Howe") // a 30-minute change
	apia := zone(t, "Pacific/Apia")       // 2011-12-30 skipped: a clock reset for cron, not DST
	for _, c := range []struct {
		expr        string
		loc         *time.Location
		after, want string // RFC 3339: the repeated hour is ambiguous as wall time
	}{
		// New York, 2026-03-08: 02:00 EST becomes 03:00 EDT.
		{"30 2 * * *", ny, "2026-03-07T03:00:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"0,30 2 * * *", ny, "2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"30 2 * * *", ny, "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"},
		{"59 1 * * *", ny, "2026-03-08T01:58:00-05:00", "2026-03-08T01:59:00-05:00"},
		{"0 3 * * *", ny, "2026-03-08T01:59:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"*/15 * * * *", ny, "2026-03-08T01:50:00-05:00", "2026-03-08T03:00:00-04:00"},
		{"*/5 2 * * *", ny, "2026-03-07T12:00:00-05:00", "2026-03-09T02:00:00-04:00"},
		{"15 */2 * * *", ny, "2026-03-08T01:50:00-05:00", "2026-03-08T04:15:00-04:00"},
		{"15 3 * * *", ny, "2026-03-08T01:50:00-05:00", "2026-03-08T03:15:00-04:00"},
		// New York, 2026-11-01: 02:00 EDT becomes 01:00 EST.
		{"*/30 * * * *", ny, "2026-11-01T01:45:00-04:00", "2026-11-01T01:00:00-05:00"},
		{"*/30 * * * *", ny, "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00"},
		{"0 * * * *", ny, "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00"},
		{"@hourly", ny, "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00"},
		{"30 1 * * *", ny, "2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00"},
		{"30 1 * * *", ny, "2026-11-01T01:45:00-04:00", "2026-11-02T01:30:00-05:00"},
		{"30 1 * * *", ny, "2026-11-01T01:10:00-05:00", "2026-11-02T01:30:00-05:00"},
		{"0 2 * * *", ny, "2026-11-01T01:30:00-04:00", "2026-11-01T02:00:00-05:00"},
		// Lord Howe, 2026-10-04: 02:00 becomes 02:30 (+10:30 to +11).
		{"15 2 * * *", lhi, "2026-10-03T12:00:00+10:30", "2026-10-04T02:30:00+11:00"},
		{"*/10 2 * * *", lhi, "2026-10-04T01:55:00+10:30", "2026-10-04T02:30:00+11:00"},
		// Samoa skipped 30 December 2011 (a day ahead): cron resets its
		// clock, it catches nothing up.
		{"0 12 * * *", apia, "2011-12-29T13:00:00-10:00", "2011-12-31T12:00:00+14:00"},
	} {
		after, err := time.Parse(time.RFC3339, c.after)
		if err != nil {
			t.Fatal(err)
		}
		want, err := time.Parse(time.RFC3339, c.want)
		if err != nil {
			t.Fatal(err)
		}
		got := MustParse(c.expr).Next(after, c.loc)
		if !got.Equal(want) {
			t.Errorf("%q after %s: %s, want %s", c.expr, c.after, got.Format(time.RFC3339), c.want)
		}
	}
}

// cronRuns simulates Vixie cron's main loop (cron.c, which cronie keeps)
// minute by minute from from to to: the wall clock in minutes, the
// virtual time, and its cases — one minute on (run what matches), a
// small jump forward (run every skipped minute), a medium one (wildcard
// jobs for the current minute, fixed-time jobs for every skipped one), a
// large change either way (reset), and time going back (wildcard jobs
// only, the virtual time waits).
func cronRuns(s *Schedule, loc *time.Location, from, to time.Time) []time.Time {
	wallMin := func(r time.Time) int64 {
		_, off := r.In(loc).Zone()
		return (r.Unix() + int64(off)) / 60
	}
	matches := func(m int64) bool { return s.Match(time.Unix(m*60, 0).UTC()) }
	fixed := s.fixedTime()
	var runs []time.Time
	r := from.Truncate(time.Minute)
	virtual := wallMin(r)
	for r = r.Add(time.Minute); !r.After(to); r = r.Add(time.Minute) {
		running := wallMin(r)
		diff := running - virtual
		run := false
		switch {
		case diff == 1 || diff > 180 || diff < -180:
			virtual = running
			run = matches(running)
		case diff > 5:
			run = !fixed && matches(running)
			for virtual < running {
				virtual++
				run = run || fixed && matches(virtual)
			}
		case diff > 0:
			for virtual < running {
				virtual++
				run = run || matches(virtual)
			}
		default:
			run = !fixed && matches(running)
		}
		if run {
			runs = append(runs, r.In(loc))
		}
	}
	return runs
}

// TestNextSimulatedCron checks Next against the simulation over three
// days around each daylight-saving change of New York and Lord Howe in
// 2026 and Samoa's skipped day.
func TestNextSimulatedCron(t *testing.T) {
	ny := zone(t, "America/New_York")
	lhi := zone(t, "Australia/Lord_Howe")
	apia := zone(t, "Pacific/Apia")
	day := func(loc *time.Location, y int, m time.Month, d int) time.Time {
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	windows := []struct {
		loc  *time.Location
		from time.Time
	}{
		{ny, day(ny, 2026, 3, 7)}, {ny, day(ny, 2026, 10, 31)},
		{lhi, day(lhi, 2026, 4, 4)}, {lhi, day(lhi, 2026, 10, 3)},
		{apia, day(apia, 2011, 12, 28)},
		{time.UTC, day(time.UTC, 2026, 3, 7)},
	}
	exprs := []string{"30 2 * * *", "0,30 2 * * *", "*/15 * * * *", "*/5 2 * * *", "15 */2 * * *", "0 * * * *",
		"30 1 * * *", "0 2 * * *", "0 3 * * *", "45 1,2 * * *", "* 2 * * *", "59 1 * * *", "0 1-3 * * *", "10 0 * * *",
		"*/7 1-2 * * *", "0,15,30,45 1 * * *", "20 2 * * sun"}
	for _, w := range windows {
		to := w.from.AddDate(0, 0, 3)
		for _, expr := range exprs {
			s := MustParse(expr)
			want := cronRuns(s, w.loc, w.from, to)
			var got []time.Time
			for n := s.Next(w.from, w.loc); !n.After(to); n = s.Next(n, w.loc) {
				got = append(got, n)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q in %s from %s:\nNext:      %v\nsimulated: %v", expr, w.loc, w.from.Format(time.RFC3339), got, want)
			}
		}
	}
}

// TestNextNever: schedules whose days never exist return the zero time
// (at once: the days are checked before any search).
func TestNextNever(t *testing.T) {
	after := time.Date(2026, 11, 29, 11, 15, 0, 0, time.UTC)
	for _, expr := range []string{"0 0 31 2 *", "0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "* * 31 2 */2", "*/5 * 30,31 2 *", "@reboot"} {
		if n := MustParse(expr).Next(after, time.UTC); !n.IsZero() {
			t.Errorf("%q: Next = %v, want never", expr, n)
		}
	}
	if n := MustParse("* * 31 2 1").Next(after, time.UTC); n.IsZero() {
		t.Errorf(`"* * 31 2 1" (OR rule: any Monday in February) never fires`)
	}
}

func BenchmarkNextNever(b *testing.B) {
	s := MustParse("0 0 31 2 *")
	after := time.Date(2026, 11, 29, 11, 15, 0, 0, time.UTC)
	for b.Loop() {
		s.Next(after, time.UTC)
	}
}

// BenchmarkNextRare: the longest real wait, 29 February on a Sunday.
func BenchmarkNextRare(b *testing.B) {
	s := MustParse("0 0 29 2 */7") // the AND rule: "*/7" begins with '*'
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Skip(err)
	}
	after := time.Date(2089, 1, 1, 0, 0, 0, 0, ny)
	for b.Loop() {
		s.Next(after, ny)
	}
}
