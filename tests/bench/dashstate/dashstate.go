//go:build linux

// Package dashstate writes a realistic state dir for the dashboard's
// benchmarks: many declared gates, each with a journal of start and end
// records checkpointed as cron-gate leaves it, and a crontab running them.
package dashstate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
)

// Write makes gates gates (worker-0000...) under stateDir, each with a
// journal of records records ending before now (1 in 10 failing, 1 in 20
// paused from the command line), and returns their config and crontab.
func Write(stateDir string, gates, records int, now time.Time) (*gate.Config, []byte, error) {
	cfg := &gate.Config{Path: filepath.Join(stateDir, "config.toml"), StateDir: stateDir, Gates: map[string]*gate.GateConfig{}}
	var tab strings.Builder
	for i := 0; i < gates; i++ {
		name := fmt.Sprintf("worker-%04d", i)
		cfg.Gates[name] = &gate.GateConfig{Name: name, Interval: 30 * time.Minute, Paused: i%50 == 7, Reason: "quota"}
		fmt.Fprintf(&tab, "%d/30 * * * * cron-gate %s -- python3 /srv/blog/scripts/%s.py\n", i%30, name, name)
		if err := writeJournal(stateDir, name, records, now, i%10 == 0); err != nil {
			return nil, nil, err
		}
		if i%20 == 3 {
			if err := gate.NewPauseFile(stateDir).Set(context.Background(), name, gate.Pause{Reason: "maintenance", Since: now, Until: now.Add(time.Hour), Who: "bench@host"}); err != nil {
				return nil, nil, err
			}
		}
	}
	return cfg, []byte(tab.String()), nil
}

// writeJournal writes records-1 records directly, then one end record through
// Journal.Append, which writes the summary checkpoint as a real run does.
func writeJournal(stateDir, name string, records int, now time.Time, failing bool) error {
	gd := filepath.Join(stateDir, "gates", name)
	// A benchmark's fixture in its own temporary dir, never a path another
	// user can reach: a plain MkdirAll is enough (not the safe walk).
	if err := os.MkdirAll(gd, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(gd, "journal.jsonl"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	t := now.Add(-time.Duration(records) * 15 * time.Minute)
	run := ""
	for i := 0; i < records-1; i++ {
		if i%2 == 0 {
			run = fmt.Sprintf("%s-%d", t.UTC().Format("20060102T150405.000000Z"), 10000+i)
		}
		r := journal.Record{V: 1, Gate: name, Run: run, Pid: 10000 + i - i%2, PidStart: 123456, Host: "pi", Time: t}
		if i%2 == 0 {
			r.Event, r.ChildPid, r.Argv = journal.EventStart, 10001+i, []string{"python3", "/srv/blog/scripts/" + name + ".py"}
		} else {
			exit := 0
			r.Event, r.Outcome, r.Exit, r.Started, r.DurationMS = journal.EventEnd, journal.OutcomeSuccess, &exit, t.Add(-6*time.Second), 6000
		}
		line, _ := json.Marshal(r)
		w.Write(append(line, '\n'))
		t = t.Add(15 * time.Minute)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	f.Close()
	j, err := journal.Open(stateDir, name, 0)
	if err != nil {
		return err
	}
	defer j.Close()
	exit, outcome := 0, journal.OutcomeSuccess
	if failing {
		exit, outcome = 1, journal.OutcomeFailure
	}
	return j.Append(journal.Record{Run: run, Event: journal.EventEnd, Time: t, Outcome: outcome, Exit: &exit, Started: t.Add(-6 * time.Second), DurationMS: 6000})
}
