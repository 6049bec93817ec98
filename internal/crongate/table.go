//go:build linux

package crongate

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safetext"
)

// Everything status and check print for people comes from files (the
// journals, pauses.json, check.json) or the cluster, where text with
// control or bidirectional characters may have been written by hand or
// before reasons were checked: every cell and every detail line goes
// through safetext.Line, so no stored text can break the table, recolour
// the terminal or reorder what is printed next to it.
var cell = safetext.Line

// printTable prints one row per gate for people.
func printTable(w io.Writer, rep *gate.Report, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GATE\tSTATE\tLAST SUCCESS\tLAST FAILURE\tLAST SKIP\tFAILS\tRUNNING")
	for _, g := range rep.Gates {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", cell(g.Name), cell(stateText(g)), cell(when(g.LastSuccess, now)),
			cell(failureText(g.LastFailure, now)), cell(skipText(g.LastSkip, now)), g.ConsecutiveFailures, cell(runningText(g, now)))
	}
	tw.Flush()
}

// printJSON prints v as indented JSON whose bytes hold no raw control or
// bidirectional character (safetext.JSON; the values are unchanged).
func printJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(safetext.JSON(data), '\n'))
	return err
}

// printOutput prints a run's kept output (status --output). It is what the
// command printed, so it goes out byte for byte — to a pipe or a file, for
// less -R, grep or a copy; on a terminal, though, the log is a file that
// holds whatever the command was fed, so escape sequences and bidi
// controls are shown escaped (safetext.Text: lines and tabs kept) instead
// of being obeyed.
func printOutput(f *os.File, text string) {
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
		text = safetext.Text(text)
	}
	f.WriteString(text)
}

func stateText(g gate.GateStatus) string {
	if g.State == gate.StatePaused && g.Pause != nil {
		s := "paused (" + g.Pause.By
		if g.Pause.Reason != "" {
			s += ": " + g.Pause.Reason
		}
		if !g.Pause.Until.IsZero() {
			s += ", until " + g.Pause.Until.Local().Format("01-02 15:04")
		}
		return s + ")"
	}
	if k := g.Skipping; k != nil && (g.State == gate.StateBlocked || g.State == gate.StateSkipped) {
		if k.Skips > 1 {
			return fmt.Sprintf("%s (%s, %d in a row)", g.State, k.Reason, k.Skips)
		}
		return g.State + " (" + k.Reason + ")"
	}
	if g.Overrun {
		return g.State + " (overrun)"
	}
	if g.State == gate.StateWaiting {
		return g.State + " (jitter; starts " + g.Waiting[0].Until.Local().Format("01-02 15:04:05") + ")"
	}
	if c := g.PeriodClaim; c != nil && len(g.Running) == 0 {
		// No run recorded, yet the claim is held: say by whom.
		return g.State + " (period claim held by " + claimHolder(c) + ")"
	}
	return g.State
}

// claimHolder names the first holder of a held period claim, short.
func claimHolder(c *gate.LockState) string {
	if len(c.Holders) == 0 || c.Holders[0].Pid == 0 {
		return "a process not visible here"
	}
	return fmt.Sprintf("pid %d", c.Holders[0].Pid)
}

func when(e *journal.Event, now time.Time) string {
	if e == nil {
		return "-"
	}
	return e.Time.Local().Format("01-02 15:04") + " (" + ago(now.Sub(e.Time)) + ")"
}

func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future: clock stepped back?"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func failureText(e *journal.Event, now time.Time) string {
	if e == nil {
		return "-"
	}
	s := when(e, now) + " " + e.Outcome
	if e.Exit != nil {
		s += fmt.Sprintf(" %d", *e.Exit)
	}
	if e.Signal != "" {
		s += " " + e.Signal
	}
	return s
}

func skipText(e *journal.Event, now time.Time) string {
	if e == nil {
		return "-"
	}
	return when(e, now) + " " + e.Reason
}

// runningText is the RUNNING cell: the runs in progress, and those
// waiting their jitter with when they start.
func runningText(g gate.GateStatus, now time.Time) string {
	if len(g.Running) == 0 && len(g.Waiting) == 0 {
		return "-"
	}
	var parts []string
	for _, w := range g.Waiting {
		parts = append(parts, "pid "+strconv.Itoa(w.Pid)+" "+waitingText(w, now))
	}
	for _, r := range g.Running {
		pid := r.ChildPid
		if pid == 0 {
			pid = r.Pid
		}
		d := now.Sub(r.Since).Round(time.Second)
		if d < 0 {
			d = 0 // the clock was stepped back since it started
		}
		parts = append(parts, fmt.Sprintf("pid %d for %s", pid, d))
	}
	return strings.Join(parts, ", ")
}

// waitingText says when a run waiting its jitter starts its command:
// "waiting, starts 15:04:05 (in 2m3s)".
func waitingText(w journal.Running, now time.Time) string {
	in := w.Until.Sub(now).Round(time.Second)
	if in < 0 {
		in = 0 // due: it is deciding its once_per claim, or about to start
	}
	return "waiting its jitter, starts " + w.Until.Local().Format("15:04:05") + " (in " + in.String() + ")"
}

// printDetail prints everything known about one gate.
func printDetail(w io.Writer, g gate.GateStatus) {
	fmt.Fprintln(w)
	line := func(k, v string) { fmt.Fprintf(w, "  %-22s %s\n", k+":", cell(v)) }
	line("declared in config", fmt.Sprint(g.Declared))
	if g.Interval != "" {
		line("interval", g.Interval)
	}
	if g.Pause != nil {
		s := "by " + g.Pause.By
		if g.Pause.Who != "" {
			s += " (" + g.Pause.Who + ")"
		}
		if !g.Pause.Since.IsZero() {
			s += ", since " + g.Pause.Since.Local().Format(time.RFC3339)
		}
		if !g.Pause.Until.IsZero() {
			s += ", until " + g.Pause.Until.Local().Format(time.RFC3339)
		}
		if g.Pause.Reason != "" {
			s += ": " + g.Pause.Reason
		}
		line("paused", s)
	}
	ev := func(k string, e *journal.Event) {
		if e == nil {
			return
		}
		s := e.Time.Local().Format(time.RFC3339)
		for _, p := range []string{e.Outcome, e.Reason, e.Signal} {
			if p != "" {
				s += " " + p
			}
		}
		if e.Exit != nil {
			s += fmt.Sprintf(" exit %d", *e.Exit)
		}
		if e.DurationMS > 0 {
			s += " after " + (time.Duration(e.DurationMS) * time.Millisecond).String()
		}
		if e.Detail != "" {
			s += " — " + e.Detail
		}
		line(k, s)
	}
	if k := g.Skipping; k != nil {
		s := fmt.Sprintf("%d in a row since %s (%s)", k.Skips, k.Since.Local().Format(time.RFC3339), k.Reason)
		if k.Blocked {
			s = "blocked: " + s
		}
		line("skipping", s)
		line("holding it back now", k.Words())
	}
	if g.PeriodClaim != nil {
		line("period claim", g.PeriodClaim.String())
	}
	if g.MaxRuntime != "" {
		s := g.MaxRuntime
		if g.Overrun {
			s += " (a run in progress has run longer: overrun)"
		}
		line("max runtime", s)
	}
	ev("last start", g.LastStart)
	ev("last end", g.LastEnd)
	ev("last success", g.LastSuccess)
	ev("last failure", g.LastFailure)
	ev("last skip", g.LastSkip)
	ev("last error", g.LastError)
	line("runs", fmt.Sprintf("%d (%d ok, %d failed)", g.Runs, g.Successes, g.Failures))
	if len(g.Skips) > 0 {
		var ks []string
		for k, n := range g.Skips {
			ks = append(ks, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(ks)
		line("skips", strings.Join(ks, ", "))
	}
	if g.JournalError != "" {
		line("journal error", g.JournalError)
	}
}
