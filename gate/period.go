//go:build linux

package gate

// Periods of once_per: a gate with once_per runs its command at most once
// per period with success. The period of an instant is decided here once;
// the run (decideOnce), the status (StateDone) and the watchdog (the
// stale rule) all ask PeriodOf.

import (
	"time"
)

// The values of once_per.
const (
	OnceHour = "1h"   // a wall-clock hour of the gate's zone
	OnceDay  = "1d"   // a calendar day of the gate's zone, from local midnight
	OnceWeek = "1w"   // an ISO week of the gate's zone, from Monday's local midnight
	OnceSlot = "slot" // the wall-clock minute the run was called in: the crontab minute that fired
)

// OncePers are once_per's accepted values, in documentation order.
var OncePers = []string{OnceHour, OnceDay, OnceWeek, OnceSlot}

// Period is one period of once_per: the instants in [Start, End).
type Period struct {
	Per        string // once_per
	Start, End time.Time
}

// Contains reports whether t lies in the period.
func (p Period) Contains(t time.Time) bool { return !t.Before(p.Start) && t.Before(p.End) }

// Key names the period as the journal records it: its start, RFC 3339 in
// the gate's zone ("2026-12-01T00:00:00+09:00").
func (p Period) Key() string { return p.Start.Format(time.RFC3339) }

// String is the period for people: "1d from 2026-12-01 00:00 KST".
func (p Period) String() string {
	return p.Per + " from " + p.Start.Format("2006-01-02 15:04 MST")
}

// PeriodOf returns the period of once_per per that holds t, reading the
// wall clock in loc (nil: time.Local); ok is false when per is not one of
// OncePers.
//
// Around daylight-saving changes a period is made of wall-clock time, as
// cron's schedule is: "1h" is a wall-clock hour, so the hour repeated when
// the clock goes back is two periods (each one real hour), and the hour
// skipped when it jumps forward is none; "1d" runs from local midnight to
// the next (23 or 25 real hours on the days of a change), and where
// midnight itself is skipped the day begins at the first instant after
// it; "1w" is seven such days from Monday; "slot" is the minute.
// TestPeriodDST holds these rules.
func PeriodOf(per string, t time.Time, loc *time.Location) (Period, bool) {
	if loc == nil {
		loc = time.Local
	}
	w := t.In(loc)
	p := Period{Per: per}
	switch per {
	case OnceSlot:
		// Minutes are minutes in every zone cron-gate meets (offsets are
		// whole minutes since 1972).
		p.Start = w.Add(-time.Duration(w.Second())*time.Second - time.Duration(w.Nanosecond()))
		p.End = p.Start.Add(time.Minute)
	case OnceHour:
		// The wall-clock hour holding t: back to its minute 0 on t's own
		// offset, so a repeated hour is told apart from the first one.
		p.Start = w.Add(-time.Duration(w.Minute())*time.Minute - time.Duration(w.Second())*time.Second - time.Duration(w.Nanosecond()))
		p.End = p.Start.Add(time.Hour)
		// A change of offset inside the hour (a 30-minute one) cuts it,
		// so that periods never overlap.
		zs, ze := w.ZoneBounds()
		if !zs.IsZero() && zs.After(p.Start) {
			p.Start = zs
		}
		if !ze.IsZero() && ze.Before(p.End) {
			p.End = ze
		}
	case OnceDay:
		p.Start = dayStart(w.Year(), w.Month(), w.Day(), loc)
		p.End = dayStart(w.Year(), w.Month(), w.Day()+1, loc)
	case OnceWeek:
		back := (int(w.Weekday()) + 6) % 7 // days since Monday
		p.Start = dayStart(w.Year(), w.Month(), w.Day()-back, loc)
		p.End = dayStart(w.Year(), w.Month(), w.Day()-back+7, loc)
	default:
		return Period{}, false
	}
	p.Start, p.End = p.Start.In(loc), p.End.In(loc)
	return p, true
}

// dayStart is the first instant of the local calendar day y-m-d in loc:
// its midnight, or, where the clock skips midnight, the first instant
// after the jump.
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	day := time.Date(y, m, d, 12, 0, 0, 0, time.UTC) // the day meant, normalised
	t := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
	// time.Date picks an instant for a midnight that does not exist
	// (it may fall on the day before): step to the day's first instant.
	if l := t.In(loc); l.Day() != day.Day() {
		_, end := t.ZoneBounds()
		if !end.IsZero() {
			return end
		}
	}
	return t
}

// Location is the zone the gate's periods are read in: time_zone, else
// time.Local (the system's zone: $TZ, else /etc/localtime). A validated
// config's time_zone loads; one that does not (zoneinfo removed since) is
// time.Local.
func (g *GateConfig) Location() *time.Location {
	if g.TimeZone != "" {
		if loc, err := time.LoadLocation(g.TimeZone); err == nil {
			return loc
		}
	}
	return time.Local
}

// NominalLength is the length of a period of per in real time when no
// clock changes: the watchdog's interval for a gate with once_per and no
// interval (0 for slot, whose length is the crontab's business).
func NominalLength(per string) time.Duration {
	switch per {
	case OnceHour:
		return time.Hour
	case OnceDay:
		return 24 * time.Hour
	case OnceWeek:
		return 7 * 24 * time.Hour
	}
	return 0
}
