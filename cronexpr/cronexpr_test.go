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
		{"15/30 * * * *", "every 30 minutes from :15"},
		{"15-59/30 * * * *", "every 30 minutes from :15"},
		{"0-29/10 * * * *", "every 10 minutes to :29"},
		{"30,45 * * * *", "hourly at :30 and :45"},
		{"0 * * * *", "hourly at :00"},
		{"@hourly", "hourly at :00"},
		{"0 */4 * * *", "every 4 hours from 00:00"},
		{"30 2/6 * * *", "every 6 hours from 02:30"},
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
		{"60 * * * *", "60 is out of range 0-59"},
		{"* 24 * * *", "24 is out of range 0-23"},
		{"* * 0 * *", "0 is out of range 1-31"},
		{"* * * 13 *", "13 is out of range 1-12"},
		{"* * * * 8", "8 is out of range 0-7"},
		{"5-1 * * * *", "backwards"},
		{"*/0 * * * *", "not a positive number"},
		{"*/-1 * * * *", "not a positive number"},
		{"*/+1 * * * *", "not a positive number"},
		{"*/61 * * * *", "larger than the field"},
		{"1,,2 * * * *", "empty list element"},
		{"x * * * *", `"x" is not a number`},
		{"* * * foo *", "not a month name"},
		{"* * * * funday", "not a day of week name"},
		{"@often", "unknown cron nickname"},
		{"99999999999999999999 * * * *", "out of range"},
		{strings.Repeat("1", MaxLen+1), "bytes long"},
		{"*/5 * * * * /usr/bin/true", "has 6 fields"},
	} {
		_, err := Parse(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.expr, err, c.want)
		}
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
		{"15/30 * * * *", seoul, "2026-11-29 20:10", "2026-11-29 20:15"},
		{"15/30 * * * *", seoul, "2026-11-29 20:15", "2026-11-29 20:45"},
		{"15/30 * * * *", seoul, "2026-11-29 23:50", "2026-11-30 00:15"},
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
		// does not exist that day and is passed over.
		{"30 2 * * *", ny, "2026-03-07 03:00", "2026-03-09 02:30"},
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
	for _, e := range []string{"15/30 * * * *", "0 */4 * * *", "30 9 * * 1-5"} {
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
	for _, s := range []string{"* * * * *", "15/30 * * * *", "0 */4 * * *", "@daily", "@reboot", "30 9 1,15 jan-mar mon-fri", "0 0 */2 * 1", "1-5/2,7 * * * 7", "bad", ""} {
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
