//go:build linux

package crongate

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// check is `cron-gate check` (docs/watchdog.md, "cron-gate check"). Exit codes: 0
// checked; 1 checked, but a notification could not be delivered (the
// state says so, and the next check tries again); 125 could not check
// (config, state dir, state file) or could not write the metrics file;
// 128+N stopped by signal N (what was delivered until then is saved).
func check(cfg *gate.Config, ps gate.Pauses, c *CheckCmd, out *safetext.Printer, sigs <-chan os.Signal) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got os.Signal
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case got = <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	ch := watch.New(cfg, ps, os.Stderr)
	ch.DryRun = c.DryRun
	res, err := ch.Run(ctx)
	cancel()
	<-stopped
	if s, ok := got.(syscall.Signal); ok && err != nil {
		// Stopped before the check could be made (waiting for the
		// state lock): 128+N, as a signal ends every wait.
		return runner.SignalCode(s)
	}
	if err != nil {
		out.Errorf("check: %v", err)
		return runner.ExitFailure
	}
	for _, w := range res.Warnings {
		out.Warnf("%s", w)
	}
	code := 0
	for _, n := range res.Notifications {
		for _, id := range sortedIDs(n.Errors) {
			out.Errorf("%s of gate %s (%s) not delivered to %s: %s; the next check tries again", n.Kind, n.Gate, n.Condition, id, n.Errors[id])
			code = 1
		}
		for _, id := range n.Delivered {
			out.Infof("sent %s of gate %s (%s) to %s", n.Kind, n.Gate, n.Condition, id)
		}
	}
	if path := metricsPath(cfg, c); path != "" && !c.DryRun {
		if err := watch.WriteMetricsFile(path, cfg, res.Report, res.State); err != nil {
			out.Errorf("metrics file: %v", err)
			code = runner.ExitFailure
		}
	}
	switch {
	case c.JSON:
		if err := printJSON(os.Stdout, res); err != nil {
			out.Errorf("%v", err)
			return runner.ExitFailure
		}
	case c.DryRun:
		printCheck(os.Stdout, res)
	}
	if s, ok := got.(syscall.Signal); ok {
		return runner.SignalCode(s)
	}
	return code
}

func metricsPath(cfg *gate.Config, c *CheckCmd) string {
	if c.MetricsFile != "" {
		return c.MetricsFile
	}
	return cfg.Check.MetricsFile
}

func sortedIDs(m map[string]string) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// printCheck prints a check for people: the conditions that are not ok or
// are remembered, then what was (or would be) sent.
func printCheck(w io.Writer, res *watch.Result) {
	if res.FirstRun {
		fmt.Fprintln(w, "first check: conditions bad since before it are muted (known at install) until remind_after; what went bad within check_interval alerts as usual")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	n := 0
	gates := map[string]bool{}
	for _, c := range res.Conditions {
		gates[c.Gate] = true
		if c.Verdict == watch.OK && c.Count == 0 && !c.Alerted {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "GATE\tCONDITION\tVERDICT\tCOUNT\tALERT\tDETAIL")
		}
		n++
		alert := "-"
		switch {
		case c.Muted:
			alert = "muted"
		case c.Alerted:
			alert = "alerted"
		case c.Count > 0:
			alert = "pending"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", cell(c.Gate), cell(c.Condition), cell(c.Verdict), c.Count, alert, cell(c.Detail))
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintf(w, "all %d gates ok\n", len(gates))
	}
	verb := "sent"
	if res.DryRun {
		verb = "would send"
	}
	for _, nt := range res.Notifications {
		fmt.Fprintf(w, "%s %s of gate %s (%s) to %s: %s\n", verb, cell(nt.Kind), cell(nt.Gate), cell(nt.Condition), cell(strings.Join(nt.To, ", ")), cell(nt.Title))
		for _, l := range strings.Split(nt.Body, "\n") {
			fmt.Fprintf(w, "    %s\n", cell(l))
		}
	}
}
