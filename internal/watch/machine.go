//go:build linux

package watch

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Conditions a gate is watched for.
const (
	CondStale       = "stale"       // no success for stale_factor intervals, or never (missing)
	CondFailed      = "failed"      // the last run failed, and the worker does not report it itself
	CondUnscheduled = "unscheduled" // not in the crontab / cron.d, or its systemd timer is not active
	CondSkipping    = "skipping"    // blocked (gate.Skipping) for longer than skipping_after
	CondOverrun     = "overrun"     // a run in progress has run longer than max_runtime
)

// Verdicts of one observation.
const (
	Bad  = "bad"
	OK   = "ok"
	Held = "held" // not judged at this check (paused, resume grace, the worker reports it, a probe failed): kept as it was
)

// Observation is one condition of one gate as one check sees it.
type Observation struct {
	Gate      string `json:"gate"`
	Condition string `json:"condition"`
	Verdict   string `json:"verdict"`
	Detail    string `json:"detail,omitempty"`
	// Output is the last lines of a failed run's output, for its alert
	// (failed, with log_output and alert_output); neutralised, bounded.
	// Not kept in check.json.
	Output string `json:"-"`
	// Began is when the condition began, where the facts say (a failing
	// streak's first failure, the moment a success became too old, a
	// blocked run's first skip plus skipping_after, a run's start plus
	// max_runtime); zero when they do not (unscheduled). The first check
	// mutes only what began more than check_interval before it.
	Began time.Time `json:"began,omitzero"`
}

// Kinds of notification.
const (
	KindAlert    = "alert"
	KindRecovery = "recovery"
)

// Notification is one alert or recovery of one condition, due to some
// notifiers, and what became of it.
type Notification struct {
	Kind      string            `json:"kind"`
	Gate      string            `json:"gate"`
	Condition string            `json:"condition"`
	Title     string            `json:"title"`
	Body      string            `json:"body"`
	Detail    string            `json:"detail,omitempty"`
	Output    string            `json:"output,omitempty"` // an alert of a failed run: its last lines (Observation.Output)
	Since     time.Time         `json:"since"`
	To        []string          `json:"to"`                  // notifier IDs it is due to
	Delivered []string          `json:"delivered,omitempty"` // those it reached
	Errors    map[string]string `json:"errors,omitempty"`    // those it did not, and why
}

// machine is the alert state machine of docs/watchdog.md's "Alerts" rules. It is
// pure: time comes in as now, notifiers as their IDs, and it only changes
// the State it is given.
//
//   - bad: counted; at AlertAfter consecutive bad checks, an alert is due to
//     every notifier that has not had it (so a failed delivery is retried
//     at the next check, and a delivered one is never repeated);
//   - ok: a condition that was alerted owes a recovery to the notifiers
//     that had the alert; it is forgotten once all of them have had it (a
//     failed recovery keeps it, and is retried); one never alerted, or
//     muted, is forgotten at once;
//   - held: nothing changes;
//   - first run (no state yet): what is bad and began more than Window
//     (check_interval) before it is muted, known at install; what began
//     within Window, or after, is new and alerts as any other. Only the
//     first check mutes: a condition that begins later never is;
//   - a muted condition still bad Remind (remind_after) after the first
//     check is unmuted, and alerts at that check: no condition stays
//     silent for ever. Once it clears it is forgotten (muted) or recovers
//     (unmuted), and alerts normally when it goes bad again;
//   - a condition or gate no longer observed (the gate left the config,
//     lost its interval...) is forgotten without a message.
type machine struct {
	AlertAfter int
	Notifiers  []string // IDs, in order
	Host       string
	Window     time.Duration // check_interval
	Remind     time.Duration // remind_after
}

// known reports whether a condition bad at the first check is known at
// install: it began more than Window before now, or when is not known.
func (m *machine) known(o Observation, now time.Time) bool {
	return o.Began.IsZero() || o.Began.Before(now.Add(-m.Window))
}

// step applies one check's observations at now and returns the
// notifications due, in observation order.
func (m *machine) step(st *State, obs []Observation, now time.Time, firstRun bool) []*Notification {
	var notes []*Notification
	seen := map[string]map[string]bool{}
	for _, o := range obs {
		if seen[o.Gate] == nil {
			seen[o.Gate] = map[string]bool{}
		}
		seen[o.Gate][o.Condition] = true
		g := st.gate(o.Gate)
		e := g.Conditions[o.Condition]
		switch o.Verdict {
		case Bad:
			if e == nil {
				muted := firstRun && m.known(o, now)
				e = &Cond{Since: now, Muted: muted, KnownAtInstall: muted}
				if g.Conditions == nil {
					g.Conditions = map[string]*Cond{}
				}
				g.Conditions[o.Condition] = e
			}
			if len(e.Recovered) > 0 {
				// Bad again while its recovery was being delivered: those
				// who heard "recovered" start a new streak.
				e.Alerted = without(e.Alerted, e.Recovered)
				e.Recovered = nil
				e.Count, e.Since = 0, now
			}
			e.Bad = true
			e.Count++
			e.LastBad = now
			e.Detail = o.Detail
			if e.Muted && !now.Before(e.RemindAt(m.Remind)) {
				// The reminder: known at install, and still bad (muted by
				// a version that did not mark it known, too).
				e.Muted, e.KnownAtInstall = false, true
			}
			if !e.Muted && e.Count >= m.AlertAfter {
				if to := without(m.Notifiers, e.Alerted); len(to) > 0 {
					notes = append(notes, m.note(KindAlert, o, e, to, now))
				}
			}
		case OK:
			if e == nil {
				continue
			}
			e.Bad = false
			to := without(m.told(e), e.Recovered)
			if e.Muted || len(to) == 0 {
				delete(g.Conditions, o.Condition)
				continue
			}
			notes = append(notes, m.note(KindRecovery, o, e, to, now))
		}
	}
	for name, g := range st.Gates {
		if seen[name] == nil {
			delete(st.Gates, name)
			continue
		}
		for c := range g.Conditions {
			if !seen[name][c] {
				delete(g.Conditions, c)
			}
		}
	}
	return notes
}

// told returns the configured notifiers that had the condition's alert.
func (m *machine) told(e *Cond) []string {
	var out []string
	for _, id := range m.Notifiers {
		if has(e.Alerted, id) {
			out = append(out, id)
		}
	}
	return out
}

// settle records what was delivered: an alert delivered to anyone counts
// for them; a recovery delivered to everyone told forgets the condition.
func (m *machine) settle(st *State, notes []*Notification, now time.Time) {
	for _, n := range notes {
		e := st.cond(n.Gate, n.Condition)
		if e == nil {
			continue
		}
		switch n.Kind {
		case KindAlert:
			if len(e.Alerted) == 0 && len(n.Delivered) > 0 {
				e.AlertedAt = now
			}
			e.Alerted = append(e.Alerted, n.Delivered...)
		case KindRecovery:
			e.Recovered = append(e.Recovered, n.Delivered...)
			if len(without(m.told(e), e.Recovered)) == 0 {
				delete(st.Gates[n.Gate].Conditions, n.Condition)
			}
		}
		st.Sent += int64(len(n.Delivered))
		st.Failed += int64(len(n.Errors))
	}
}

// note builds the message of an alert or recovery.
func (m *machine) note(kind string, o Observation, e *Cond, to []string, now time.Time) *Notification {
	n := &Notification{Kind: kind, Gate: o.Gate, Condition: o.Condition, Since: e.Since, To: to}
	what := map[string]string{CondStale: "is stale", CondFailed: "failed", CondUnscheduled: "is not scheduled",
		CondSkipping: "is blocked", CondOverrun: "is overrunning"}[o.Condition]
	if what == "" {
		what = o.Condition
	}
	var body strings.Builder
	if kind == KindAlert {
		n.Title = fmt.Sprintf("cron-gate: %s %s", o.Gate, what)
		n.Detail = o.Detail
		body.WriteString(o.Detail)
		fmt.Fprintf(&body, "\nBad since %s (%d checks).", stamp(e.Since), e.Count)
		if e.KnownAtInstall {
			fmt.Fprintf(&body, "\nKnown at install: already bad at the watchdog's first check, muted, and still bad after remind_after %s.", runner.ShortDuration(m.Remind))
		}
		if o.Output != "" {
			n.Output = o.Output
			body.WriteString("\nLast output:\n" + o.Output)
		}
	} else {
		n.Title = fmt.Sprintf("cron-gate: %s recovered (%s)", o.Gate, o.Condition)
		n.Detail = o.Detail
		fmt.Fprintf(&body, "Back to normal at %s; it was bad since %s.", stamp(now), stamp(e.Since))
		if e.Detail != "" {
			// From check.json, which an older version or a hand wrote.
			fmt.Fprintf(&body, "\nWas: %s", safetext.Line(e.Detail))
		}
	}
	if m.Host != "" {
		fmt.Fprintf(&body, "\nHost: %s", safetext.Line(m.Host))
	}
	n.Body = body.String()
	return n
}

// stamp formats a time for people: local, to the minute, with the zone.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04 MST")
}

// sortObservations orders observations by gate, then condition.
func sortObservations(obs []Observation) {
	sort.SliceStable(obs, func(i, j int) bool {
		if obs[i].Gate != obs[j].Gate {
			return obs[i].Gate < obs[j].Gate
		}
		return obs[i].Condition < obs[j].Condition
	})
}
