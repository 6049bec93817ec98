//go:build linux

package gate

import "time"

// The resume time, for the watchdog (cron-gate check). A paused gate's last
// success grows old while it is paused, so right after a resume it looks
// stale until its next run: the watchdog holds "stale" for one interval
// plus a grace from the resume. The resume is recorded here, in
// pauses.json's "resumed" map, by `cron-gate resume` (for a command-line
// and for a config pause alike); a command-line pause that expired by
// itself resumed at its "until". A config pause lifted by editing the file
// by hand leaves no record: the watchdog then uses the last check that saw
// the gate paused.

// NoteResumed records that gate was resumed at t.
func NoteResumed(stateDir, gate string, t time.Time) error {
	return updatePauseDoc(stateDir, func(d *pauseDoc) bool {
		if d.Resumed == nil {
			d.Resumed = map[string]time.Time{}
		}
		d.Resumed[gate] = t
		return true
	})
}

// resumedAt returns when gate was last resumed, as far as pauses.json
// knows at now: the recorded resume, or the end of an expired command-line
// pause, whichever is later; zero if neither.
func resumedAt(d *pauseDoc, gate string, now time.Time) time.Time {
	var t time.Time
	if d == nil {
		return t
	}
	if r, ok := d.Resumed[gate]; ok {
		t = r
	}
	if p, ok := d.Gates[gate]; ok && !p.Until.IsZero() && !p.Until.After(now) && p.Until.After(t) {
		t = p.Until
	}
	return t
}
