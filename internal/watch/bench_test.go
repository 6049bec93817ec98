package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/gateconf"
)

// BenchmarkCheck1000 is one `cron-gate check` over 1,000 declared gates
// with long journals: each has 991 records (just under the default
// history of 1,000, so nothing has rotated) and 1 gate in 10 is failing.
// The crontab comes from `cat FILE` (one process per check, as crontab -l
// is), the state is read, stepped and written back (fsynced) under its
// lock, and the notifier records. Three checks are made before the timer
// starts, so the loop measures the steady state (no notifications).
//
// Sub-benchmarks: fold=60, the summary checkpoint is 60 records (about 14
// KiB, just under the 16 KiB that makes the next append write a new one)
// before the end of every journal — the most gate.Status ever folds in;
// fold=0, every checkpoint is at the end.
func BenchmarkCheck1000(b *testing.B) {
	for _, fold := range []int{60, 0} {
		b.Run(fmt.Sprintf("fold=%d", fold), func(b *testing.B) { benchCheck(b, 1000, fold) })
	}
}

func benchCheck(b *testing.B, gates, fold int) {
	dir := b.TempDir()
	var cfgText, tab strings.Builder
	fmt.Fprintf(&cfgText, "state_dir = %q\n[check]\ncrontab_command = [\"cat\", %q]\ncron_d = []\n", dir, filepath.Join(dir, "crontab"))
	now := time.Now()
	for i := 0; i < gates; i++ {
		name := fmt.Sprintf("worker-%04d", i)
		fmt.Fprintf(&cfgText, "[gates.%s]\ninterval = \"30m\"\n", name)
		fmt.Fprintf(&tab, "*/30 * * * * cron-gate %s -- python3 /srv/blog/scripts/%s.py\n", name, name)
		writeLongJournal(b, dir, name, now, i%10 == 0, fold)
	}
	os.WriteFile(filepath.Join(dir, "crontab"), []byte(tab.String()), 0o644)
	cfg, err := gateconf.Parse(filepath.Join(dir, "config.toml"), []byte(cfgText.String()))
	if err != nil {
		b.Fatal(err)
	}
	rec := &recorder{id: "rec"}
	c := &Checker{Config: cfg, Now: time.Now, Probe: NewSystemProbe(cfg.Check), Notifiers: []Notifier{rec}, Host: "bench"}
	for i := 0; i < 3; i++ { // the baseline, then nothing new to alert
		if _, err := c.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := c.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Notifications) != 0 || len(res.Conditions) != 3*gates {
			b.Fatalf("%d notifications, %d conditions", len(res.Notifications), len(res.Conditions))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(gates), "µs/gate")
}

// writeLongJournal writes 990-fold records, a checkpointed end record,
// and fold more records past the checkpoint; the last runs of a failing
// gate failed.
func writeLongJournal(b *testing.B, stateDir, name string, now time.Time, failing bool, fold int) {
	gd := filepath.Join(stateDir, "gates", name)
	if err := os.MkdirAll(gd, 0o755); err != nil {
		b.Fatal(err)
	}
	raw := func(f *os.File, n int, from time.Time) time.Time {
		w := bufio.NewWriter(f)
		t := from
		run := ""
		for i := 0; i < n; i++ {
			if i%2 == 0 { // a start and its end share the run ID
				run = fmt.Sprintf("%s-%d", t.UTC().Format("20060102T150405.000000Z"), 10000+i)
			}
			ev := journal.Record{V: 1, Gate: name, Run: run, Pid: 10000 + i - i%2, PidStart: 123456, Host: "pi", Time: t}
			if i%2 == 0 {
				ev.Event, ev.ChildPid, ev.Argv = journal.EventStart, 10001+i, []string{"python3", "/srv/blog/scripts/" + name + ".py"}
			} else {
				ev.Event, ev.Outcome, ev.Exit, ev.Started, ev.DurationMS = journal.EventEnd, journal.OutcomeSuccess, code(0), t.Add(-6*time.Second), 6000
				if failing && i > n-4 {
					ev.Outcome, ev.Exit = journal.OutcomeFailure, code(1)
				}
			}
			line, _ := json.Marshal(ev)
			w.Write(append(line, '\n'))
			t = t.Add(time.Second)
		}
		w.Flush()
		return t
	}
	jp := filepath.Join(gd, "journal.jsonl")
	f, err := os.Create(jp)
	if err != nil {
		b.Fatal(err)
	}
	t := raw(f, 990-fold, now.Add(-2*time.Hour))
	f.Close()
	j, err := journal.Open(stateDir, name, 0)
	if err != nil {
		b.Fatal(err)
	}
	// An end record through Append: the summary checkpoint is written.
	end := journal.Record{Run: "checkpoint", Event: journal.EventEnd, Time: t, Outcome: journal.OutcomeSuccess, Exit: code(0), Started: t}
	if failing {
		end.Outcome, end.Exit = journal.OutcomeFailure, code(1)
	}
	if err := j.Append(end); err != nil {
		b.Fatal(err)
	}
	j.Close()
	f, err = os.OpenFile(jp, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	raw(f, fold, t.Add(time.Second))
	f.Close()
}
