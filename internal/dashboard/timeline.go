//go:build linux

package dashboard

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/lockfile"
)

// Timeline is the body of GET /api/timeline (schema v1, docs/dashboard.md
// "Timeline"): per gate, its runs as spans and its skips as instants over
// the last Days days, each busy or legacy skip with who held its locks
// then (journal.Record.HeldBy). Bounded: at most timelineLanes lanes,
// each from at most timelineBytes of its journal and with at most
// timelineItems runs and skips; Cut says where something was left out.
type Timeline struct {
	V         int       `json:"v"`
	Generated time.Time `json:"generated"`
	Since     time.Time `json:"since"`
	Days      int       `json:"days"`
	TimeZone  TimeZone  `json:"time_zone"`
	Lanes     []Lane    `json:"lanes"`
	// Cut says that lanes were left out (more gates than timelineLanes).
	Cut      string   `json:"cut,omitempty"`
	Warnings []string `json:"warnings"`
}

// Lane is one gate's row of the timeline.
type Lane struct {
	Gate     string `json:"gate"`
	Category string `json:"category"` // the table's (problems first): failing, blocked, ... never-run
	Runs     []Span `json:"runs"`
	Skips    []Mark `json:"skips"`
	// Cut says what of the window is not shown: older records not read
	// (the journal past timelineBytes), or items past timelineItems.
	Cut string `json:"cut,omitempty"`
}

// Span is one run: from its start to its end (now, for one still
// running, whose Outcome is "running").
type Span struct {
	Run     string    `json:"run"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Outcome string    `json:"outcome"`
	Exit    *int      `json:"exit,omitempty"`
	Signal  string    `json:"signal,omitempty"`
}

// Mark is one skip (or error: cron-gate could not decide) at one instant.
type Mark struct {
	Time    time.Time `json:"time"`
	Run     string    `json:"run"`
	Outcome string    `json:"outcome"` // skipped or error
	Reason  string    `json:"reason"`
	// Holders held its locks then: a cron-gate run ({gate, run}; pid too)
	// or a process alone ({pid, command}). Command is empty where the
	// dashboard hides commands (gate.Report.HideCommands' rule).
	Holders     []MarkHolder `json:"holders,omitempty"`
	HoldersMore int          `json:"holders_more,omitempty"`
}

// MarkHolder is one holder of a Mark.
type MarkHolder struct {
	Gate    string `json:"gate,omitempty"`
	Run     string `json:"run,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
}

// Bounds of an answer.
const (
	timelineLanes = 200      // gates shown
	timelineBytes = 2 << 20  // of one gate's journal files read, from their end
	timelineItems = 2000     // runs plus skips of one lane
	timelineTotal = 64 << 20 // of all journals read for one answer
)

// timelineDays are the windows the timeline offers (?days=): 24 hours,
// the default, and a week.
var timelineDays = map[string]int{"1": 1, "7": 7}

func (h *handler) apiTimeline(w http.ResponseWriter, r *http.Request) {
	days, vs := 1, r.URL.Query()["days"]
	if len(vs) > 0 {
		days = timelineDays[vs[0]]
	}
	if days == 0 || len(vs) > 1 {
		fail(w, r, http.StatusBadRequest, "days must be 1 or 7")
		return
	}
	s, err := h.summary()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	cfg, err := h.config()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.timeline(gate.StateDirFor(cfg), s, days, h.now()))
}

// timeline builds the answer from the journals under stateDir, for the
// gates of s in the table's order (problems first).
func (h *handler) timeline(stateDir string, s *Summary, days int, now time.Time) *Timeline {
	z := newZoner(h.loc)
	since := now.Add(-time.Duration(days) * 24 * time.Hour)
	t := &Timeline{V: 1, Generated: z.t(now), Since: z.t(since), Days: days, Lanes: []Lane{}, Warnings: []string{}}
	gates := make([]GateSummary, len(s.Gates))
	copy(gates, s.Gates)
	sort.SliceStable(gates, func(a, b int) bool { return categoryRank(&gates[a]) < categoryRank(&gates[b]) })
	if len(gates) > timelineLanes {
		t.Cut = "only the first " + plural(timelineLanes, "gate") + " of " + plural(len(gates), "gate") + " are shown"
		gates = gates[:timelineLanes]
	}
	jr, err := journal.NewReader(stateDir)
	if err != nil {
		t.Warnings = append(t.Warnings, "journals: "+err.Error())
	} else {
		defer jr.Close()
	}
	hide := !lockfile.CommandsShownToAll()
	var total int64
	for i := range gates {
		g := &gates[i]
		ln := Lane{Gate: g.Name, Category: g.Category, Runs: []Span{}, Skips: []Mark{}}
		if jr != nil && total < timelineTotal {
			var recs []journal.Record
			var cut bool
			if j, err := jr.Journal(g.Name); err == nil && j != nil {
				var n int64
				recs, cut, n, _ = j.Tail(min(timelineBytes, timelineTotal-total))
				j.Close()
				total += n
			}
			ln.fill(recs, g, since, now, z, hide)
			if cut && (len(recs) == 0 || recs[0].Time.After(since)) {
				ln.Cut = fmt.Sprintf("older records of the window were not read (the journal is longer than %d MiB)", timelineBytes>>20)
			}
		} else if jr != nil {
			ln.Cut = "not read: the answer's bound on journal bytes was reached"
		}
		t.Lanes = append(t.Lanes, ln)
	}
	t.TimeZone = TimeZone{Name: h.loc.String(), Abbreviations: z.abbr}
	return t
}

// fill makes the lane's runs and marks from its records (oldest first),
// keeping those in [since, now].
func (ln *Lane) fill(recs []journal.Record, g *GateSummary, since, now time.Time, z *zoner, hide bool) {
	starts := map[string]time.Time{}
	var runs []Span
	var marks []Mark
	for _, rec := range recs {
		switch rec.Event {
		case journal.EventStart:
			starts[rec.Run] = rec.Time
		case journal.EventEnd:
			start, ok := starts[rec.Run]
			delete(starts, rec.Run)
			if rec.Outcome == journal.OutcomeSkipped {
				// The command ran only to find its locks busy: a skip.
				if !rec.Time.Before(since) {
					marks = append(marks, markOf(rec, hide))
				}
				continue
			}
			if !rec.Started.IsZero() {
				start = rec.Started
			} else if !ok {
				start = rec.Time
			}
			if rec.Time.Before(since) {
				continue
			}
			runs = append(runs, Span{Run: rec.Run, Start: start, End: rec.Time, Outcome: rec.Outcome, Exit: rec.Exit, Signal: rec.Signal})
		case journal.EventSkip, journal.EventError:
			if !rec.Time.Before(since) {
				marks = append(marks, markOf(rec, hide))
			}
		}
	}
	live := map[string]bool{}
	for _, rn := range g.Running {
		live[rn.Run] = true
	}
	for id, start := range starts {
		// No end: still running, or cron-gate was killed (vanished).
		sp := Span{Run: id, Start: start, End: start, Outcome: journal.OutcomeVanished}
		if live[id] {
			sp.End, sp.Outcome = now, gate.StateRunning
		}
		if !sp.End.Before(since) {
			runs = append(runs, sp)
		}
	}
	sort.SliceStable(runs, func(a, b int) bool { return runs[a].Start.Before(runs[b].Start) })
	// The newest are kept when there are too many.
	if n := len(runs) + len(marks); n > timelineItems {
		ln.Cut = fmt.Sprintf("only the last %d runs and skips of %d are shown", timelineItems, n)
		keepR := timelineItems * len(runs) / n
		runs, marks = runs[len(runs)-keepR:], marks[len(marks)-(timelineItems-keepR):]
	}
	for _, sp := range runs {
		sp.Start, sp.End = z.t(sp.Start), z.t(sp.End)
		if sp.Start.Before(since) {
			sp.Start = z.t(since)
		}
		ln.Runs = append(ln.Runs, sp)
	}
	for _, m := range marks {
		m.Time = z.t(m.Time)
		ln.Skips = append(ln.Skips, m)
	}
}

// markOf is a skip or error record's mark.
func markOf(rec journal.Record, hide bool) Mark {
	m := Mark{Time: rec.Time, Run: rec.Run, Outcome: rec.Outcome, Reason: rec.Reason, HoldersMore: rec.HeldByMore}
	for _, hb := range rec.HeldBy {
		mh := MarkHolder{Gate: hb.Gate, Run: hb.Run, Pid: hb.Pid, Command: hb.Command}
		if hide {
			mh.Command = ""
		}
		m.Holders = append(m.Holders, mh)
	}
	return m
}
