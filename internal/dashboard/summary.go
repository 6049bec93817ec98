//go:build linux

package dashboard

import (
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/cronexpr"
	"github.com/crongate/crongate/internal/watch"
)

// Summary is the body of GET /api/summary (schema v1; README.md in this directory
// has it with an example). It is the status report of `cron-gate status
// --json` — the same fields with the same names, the same judgement —
// with, per gate, what only the dashboard adds: the cadence read from the
// crontab, the next expected run, and the watchdog's conditions as its
// last check left them (check.json). Fields are only ever added within
// v 1.
//
// Every time is RFC 3339 in the dashboard's time zone (the same instants
// as the status report, with that zone's offset); TimeZone maps each
// offset used to the zone's abbreviation, so a reader can print "11-29
// 20:15 KST" without a time zone database.
type Summary struct {
	V         int           `json:"v"`
	Generated time.Time     `json:"generated"`
	Config    string        `json:"config,omitempty"`
	StateDir  string        `json:"state_dir"`
	TimeZone  TimeZone      `json:"time_zone"`
	Gates     []GateSummary `json:"gates"`
	Watchdog  *Watchdog     `json:"watchdog,omitempty"` // nil: no check has run yet
	Warnings  []string      `json:"warnings"`           // always present: [] when none
}

// TimeZone is the zone the summary's times are given in.
type TimeZone struct {
	Name string `json:"name"` // IANA name when known ("Asia/Seoul"), else "Local" or "UTC"
	// Abbreviations maps each offset that appears in the summary, as
	// written at the end of its times ("+09:00", "Z"), to the zone's
	// abbreviation then ("KST").
	Abbreviations map[string]string `json:"abbreviations"`
}

// Watchdog is what the summary tells of `cron-gate check` as a whole.
type Watchdog struct {
	LastCheck time.Time `json:"last_check"`
	Checks    int64     `json:"checks"`
}

// GateSummary is one gate: gate.GateStatus (its fields inline, as in the
// status report) and the dashboard's additions.
type GateSummary struct {
	gate.GateStatus
	// ConfigPaused: the config says paused = true for the gate (a
	// command-line pause, when there is one too, is the one in Pause).
	// Only force-resume lifts it.
	ConfigPaused bool `json:"config_paused,omitempty"`
	// LogOutput: the gate keeps its output (log_output), so
	// /api/output?gate=NAME can show the last run's.
	LogOutput bool `json:"log_output,omitempty"`
	// Schedules are the crontab lines that run the gate, each with its
	// file and line, and those that would but Debian's cron ignores
	// (Error says why); none when no crontab was read or no line runs
	// it.
	Schedules []Schedule `json:"schedules,omitempty"`
	// Cadence says how often the gate runs, in words: the schedules'
	// words, else the config's interval ("every 30 minutes"); empty when
	// neither is known. A line cron ignores contributes its raw schedule
	// and "(cron ignores it)".
	Cadence string `json:"cadence,omitempty"`
	// NextRun is when the gate is next expected to run: the earliest
	// next time of its schedules, else its last start plus its interval
	// (NextRunFrom says which). Zero when unknown. A paused gate has one
	// too: it is when it would run, and its run will be skipped (the page
	// says "paused", and "would run at" this time).
	NextRun     time.Time `json:"next_run,omitzero"`
	NextRunFrom string    `json:"next_run_from,omitempty"` // "crontab" or "interval"
	// JitterMS is the gate's jitter offset on this host
	// (gate.JitterOffset), included in NextRun: when the command is
	// expected to start, not when cron fires.
	JitterMS int64 `json:"jitter_ms,omitempty"`
	// Conditions are the watchdog's conditions for the gate
	// (watch.Watched), each with its state after the last check.
	Conditions []Condition `json:"conditions,omitempty"`
	// Category is what the page sorts, counts and filters by, most
	// pressing first (categories): the state, with what only the
	// watchdog knows (stale) and what a running gate may be (overrun).
	Category string `json:"category"`
}

// Schedule is one crontab line that runs a gate.
type Schedule struct {
	Expr   string    `json:"expr"`            // the schedule as written: five fields or an @ nickname
	Source string    `json:"source"`          // the crontab and line: "/etc/cron.d/blog:3", "crontab -l:5"
	Line   int       `json:"line"`            // the line number in that crontab
	Text   string    `json:"text,omitempty"`  // in words; empty when cron does not run the line
	Error  string    `json:"error,omitempty"` // why Debian's cron does not run the line (its schedule, its file)
	Next   time.Time `json:"next,omitzero"`   // its next time after Generated; zero for @reboot, never, or an Error
	// CronTZ is the CRON_TZ a line above it sets, which Debian's cron
	// does not read: Next is in cron's zone all the same.
	CronTZ string `json:"cron_tz,omitempty"`
}

// Condition is one condition the watchdog watches a gate for, as its last
// check left it.
type Condition struct {
	Condition string `json:"condition"` // stale, failed, unscheduled
	// State is the alert state, as the cron_gate_alert metric names it:
	// ok (not bad, or never judged), pending (bad, not yet alerted),
	// alerted, muted (known at install: bad at the first check since before
	// it; alerts at RemindAt if still bad), recovering
	// (cleared, recovery not yet delivered to all).
	State  string    `json:"state"`
	Bad    bool      `json:"bad,omitempty"`    // the last check that judged it found it bad
	Count  int       `json:"count,omitempty"`  // consecutive bad checks
	Since  time.Time `json:"since,omitzero"`   // first bad check of the streak
	Detail string    `json:"detail,omitempty"` // what the last bad check saw
	// KnownAtInstall: bad at the watchdog's first check and begun before
	// it; while muted, RemindAt is when it alerts if still bad.
	KnownAtInstall bool      `json:"known_at_install,omitempty"`
	RemindAt       time.Time `json:"remind_at,omitzero"`
}

// build makes the summary at now.
func (h *handler) build(cfg *gate.Config, rep *gate.Report, st *watch.State, stErr error, jobs map[string][]watch.CrontabJob, now time.Time) *Summary {
	z := newZoner(h.loc)
	s := &Summary{V: 1, Generated: z.t(rep.Generated), Config: rep.Config, StateDir: rep.StateDir,
		Warnings: append([]string{}, rep.Warnings...)}
	if stErr != nil {
		s.Warnings = append(s.Warnings, stErr.Error())
	}
	if st != nil {
		s.Watchdog = &Watchdog{LastCheck: z.t(st.Updated), Checks: st.Checks}
	}
	s.Gates = make([]GateSummary, 0, len(rep.Gates))
	for i := range rep.Gates {
		gs := GateSummary{GateStatus: rep.Gates[i]}
		gc := cfg.Gate(gs.Name)
		gs.ConfigPaused = gc.Paused
		gs.LogOutput = gc.LogOutput
		var words []string
		for _, j := range jobs[gs.Name] {
			sc := Schedule{Expr: j.Schedule, Source: j.Where(), Line: j.Line, CronTZ: j.CronTZ}
			if p, err := h.parseSchedule(j.Schedule); err != nil || j.Rejected != "" {
				sc.Error = "cron does not run this line: " + j.Rejected
				if j.Rejected == "" {
					sc.Error = err.Error()
				}
				words = append(words, j.Schedule+" (cron ignores it)")
			} else {
				sc.Text = p.Describe()
				words = append(words, sc.Text)
				sc.Next = p.Next(now, h.cronLoc)
				if !sc.Next.IsZero() && (gs.NextRun.IsZero() || sc.Next.Before(gs.NextRun)) {
					gs.NextRun, gs.NextRunFrom = sc.Next, "crontab"
				}
			}
			gs.Schedules = append(gs.Schedules, sc)
		}
		if len(words) > 0 {
			gs.Cadence = strings.Join(words, "; ")
		} else if gc.Interval > 0 {
			gs.Cadence = "every " + durationWords(gc.Interval)
		}
		if gs.NextRun.IsZero() && gc.Interval > 0 && gs.LastStart != nil {
			gs.NextRun, gs.NextRunFrom = gs.LastStart.Time.Add(gc.Interval), "interval"
		}
		if j := gate.JitterOf(gc, &rep.Gates[i], h.opts.Host); j > 0 && gs.NextRunFrom == "crontab" {
			gs.NextRun, gs.JitterMS = gs.NextRun.Add(j), j.Milliseconds()
		}
		for _, c := range watch.WatchedWith(cfg, &rep.Gates[i], watch.LineOncePer(jobs[gs.Name])) {
			cd := Condition{Condition: c, State: "ok"}
			if st != nil && st.Gates[gs.Name] != nil {
				if e := st.Gates[gs.Name].Conditions[c]; e != nil {
					cd.State = watch.AlertState(e)
					cd.Bad, cd.Count, cd.Since, cd.Detail = e.Bad, e.Count, e.Since, e.Detail
					cd.KnownAtInstall = e.KnownAtInstall
					if e.Muted {
						cd.RemindAt = z.t(e.RemindAt(cfg.Check.RemindAfterOr()))
					}
				}
			}
			gs.Conditions = append(gs.Conditions, cd)
		}
		gs.Category = category(&gs)
		z.gate(&gs)
		s.Gates = append(s.Gates, gs)
	}
	s.TimeZone = TimeZone{Name: h.loc.String(), Abbreviations: z.abbr}
	return s
}

// durationWords says an interval: "30 minutes", "4 hours", "1h30m".
func durationWords(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return plural(int(d/(24*time.Hour)), "day")
	case d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0 && d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d%time.Second == 0 && d < time.Minute:
		return plural(int(d/time.Second), "second")
	}
	s := d.String()
	for _, suf := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, suf) {
			s = s[:len(s)-len(suf)+1]
		}
	}
	return s
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// zoner converts times to the dashboard's zone and notes the
// abbreviation of each offset it meets.
type zoner struct {
	loc  *time.Location
	abbr map[string]string
	seen map[int]bool // offsets (seconds east of UTC) already in abbr
}

func newZoner(loc *time.Location) *zoner {
	return &zoner{loc: loc, abbr: map[string]string{}, seen: map[int]bool{}}
}

func (z *zoner) t(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	t = t.In(z.loc)
	// The abbreviation is noted once per offset: formatting the offset
	// of every time would cost more than the rest of the conversion.
	if name, off := t.Zone(); !z.seen[off] {
		z.seen[off] = true
		z.abbr[t.Format("Z07:00")] = name
	}
	return t
}

func (z *zoner) ev(e **journal.Event) {
	if *e == nil {
		return
	}
	c := **e // the report's events are not ours to change
	c.Time, c.Started = z.t(c.Time), z.t(c.Started)
	*e = &c
}

// gate converts every time of one gate.
func (z *zoner) gate(g *GateSummary) {
	if g.Pause != nil {
		p := *g.Pause
		p.Since, p.Until = z.t(p.Since), z.t(p.Until)
		g.Pause = &p
	}
	if len(g.Running) > 0 {
		rs := make([]journal.Running, len(g.Running))
		for i, r := range g.Running {
			r.Since = z.t(r.Since)
			rs[i] = r
		}
		g.Running = rs
	}
	if len(g.Waiting) > 0 {
		ws := make([]journal.Running, len(g.Waiting))
		for i, w := range g.Waiting {
			w.Since, w.Until = z.t(w.Since), z.t(w.Until)
			ws[i] = w
		}
		g.Waiting = ws
	}
	for _, e := range []**journal.Event{&g.LastStart, &g.LastEnd, &g.LastSuccess, &g.LastFailure, &g.LastSkip, &g.LastError} {
		z.ev(e)
	}
	g.ResumedAt = z.t(g.ResumedAt)
	if g.Skipping != nil {
		k := *g.Skipping
		k.Since, k.Last = z.t(k.Since), z.t(k.Last)
		k.Locks = append([]gate.LockState(nil), k.Locks...)
		for i := range k.Locks {
			hs := append([]gate.Holder(nil), k.Locks[i].Holders...)
			for j := range hs {
				hs[j].Started = z.t(hs[j].Started)
			}
			k.Locks[i].Holders = hs
		}
		g.Skipping = &k
	}
	g.NextRun = z.t(g.NextRun)
	for i := range g.Schedules {
		g.Schedules[i].Next = z.t(g.Schedules[i].Next)
	}
	for i := range g.Conditions {
		g.Conditions[i].Since = z.t(g.Conditions[i].Since)
	}
}

// crontabIndex groups the cron-gate jobs of the crontabs by gate, in the
// order read.
func crontabIndex(scan *watch.CronScan) map[string][]watch.CrontabJob {
	m := map[string][]watch.CrontabJob{}
	if scan == nil {
		return m
	}
	for _, j := range scan.Jobs {
		m[j.Gate] = append(m[j.Gate], j)
	}
	return m
}

// parseSchedule parses a crontab schedule, remembering the result: the
// same few expressions come back at every request.
func (h *handler) parseSchedule(expr string) (*cronexpr.Schedule, error) {
	h.schedMu.Lock()
	defer h.schedMu.Unlock()
	if r, ok := h.sched[expr]; ok {
		return r.s, r.err
	}
	s, err := cronexpr.Parse(expr)
	if len(h.sched) > 4096 {
		h.sched = map[string]parsedSchedule{}
	}
	h.sched[expr] = parsedSchedule{s, err}
	return s, err
}

type parsedSchedule struct {
	s   *cronexpr.Schedule
	err error
}

// categories are the table's order, most pressing first: the page's
// CATEGORIES (app.js) is the same list (TestCategoriesAgree).
var categories = []string{"failing", "blocked", "stale", "overrun", "skipped", "paused", "running", "waiting", "done", "ok", "never-run"}

// category is GateSummary.Category: the state, with what only the
// watchdog knows (stale) and what a running gate may be (overrun). The
// page reads it (app.js has no rule of its own).
func category(g *GateSummary) string {
	switch {
	case g.State == "failing" || g.State == "error":
		return "failing"
	case g.State == "blocked":
		return "blocked"
	}
	if g.State == "ok" || g.State == "skipped" || g.State == "never-run" {
		for _, c := range g.Conditions {
			if c.Condition == "stale" && c.Bad {
				return "stale"
			}
		}
	}
	if g.Overrun {
		return "overrun"
	}
	return g.State
}

func categoryRank(g *GateSummary) int {
	c := g.Category
	for i, x := range categories {
		if x == c {
			return i
		}
	}
	return len(categories)
}
