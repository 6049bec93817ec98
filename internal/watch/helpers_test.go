package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/gateconf"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// clock is an injected clock: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeProbe answers from maps.
type fakeProbe struct {
	mu       sync.Mutex
	cron     map[string]bool     // nil: crontab not read; false: a line cron ignores
	flags    map[string][]string // a gate's line's flags (CrontabJob.Flags)
	cronErr  error
	timers   map[string]string // unit -> state
	timerErr error
	handled  map[string]bool // file -> handled
}

func (p *fakeProbe) Crontabs(context.Context) (*CronScan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cronErr != nil {
		return nil, p.cronErr
	}
	if p.cron == nil {
		return nil, nil
	}
	scan := &CronScan{Where: "crontab"}
	for k, v := range p.cron {
		j := CrontabJob{Gate: k, Schedule: "* * * * *", Source: "crontab", Line: 1, Flags: p.flags[k]}
		if !v {
			j.Rejected = "bad minute: the fake says so"
		}
		scan.Jobs = append(scan.Jobs, j)
	}
	return scan, nil
}

func (p *fakeProbe) TimerState(_ context.Context, unit string) (bool, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timerErr != nil {
		return false, "", p.timerErr
	}
	s := p.timers[unit]
	if s == "" {
		s = "inactive"
	}
	return s == "active", s, nil
}

func (p *fakeProbe) FailureHandled(file, key string) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handled[file] {
		return true, key + " in " + file + " is set"
	}
	return false, ""
}

// recorder is a recording notifier; fail makes its next deliveries fail.
type recorder struct {
	id     string
	mu     sync.Mutex
	msgs   []Message
	fail   int  // fail this many more deliveries
	hang   bool // block until ctx ends
	during func()
}

func (r *recorder) ID() string            { return r.id }
func (r *recorder) Budget() time.Duration { return 2 * time.Second }

func (r *recorder) Notify(ctx context.Context, m Message) error {
	if r.during != nil {
		r.during()
	}
	r.mu.Lock()
	hang := r.hang
	if r.fail > 0 {
		r.fail--
		r.mu.Unlock()
		return errors.New("injected failure")
	}
	r.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	return nil
}

// take returns and forgets the messages delivered so far, as
// "kind gate/condition" lines.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		out = append(out, m.Kind+" "+m.Gate+"/"+m.Condition)
	}
	r.msgs = nil
	return out
}

// env is a state dir, a config and a checker with a fake clock, probe and
// notifier.
type env struct {
	t     *testing.T
	dir   string
	cfg   *gate.Config
	clock *clock
	probe *fakeProbe
	rec   *recorder
	notes []Notifier
}

// newEnv parses the config body (state_dir is added) and sets up fakes.
func newEnv(t *testing.T, body string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, clock: &clock{t: t0}, probe: &fakeProbe{}, rec: &recorder{id: "rec"}}
	e.notes = []Notifier{e.rec}
	e.setConfig(body)
	return e
}

func (e *env) setConfig(body string) {
	e.t.Helper()
	src := fmt.Sprintf("state_dir = %q\n%s", e.dir, body)
	cfg, err := gateconf.Parse(filepath.Join(e.dir, "config.toml"), []byte(src))
	if err != nil {
		e.t.Fatal(err)
	}
	e.cfg = cfg
}

func (e *env) checker() *Checker {
	return &Checker{Config: e.cfg, Now: e.clock.Now, Probe: e.probe, Notifiers: e.notes, Host: "testhost"}
}

// check runs one check and returns the messages the recorder got.
func (e *env) check() (*Result, []string) {
	e.t.Helper()
	res, err := e.checker().Run(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return res, e.rec.take()
}

// expect runs one check and compares the recorder's messages.
func (e *env) expect(want ...string) *Result {
	e.t.Helper()
	res, got := e.check()
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		e.t.Fatalf("at %s: sent %q, want %q\nconditions: %+v", e.clock.Now().Format(time.TimeOnly), got, want, res.Conditions)
	}
	return res
}

// record appends journal records for gate at the fake clock's time.
func (e *env) record(name string, recs ...journal.Record) {
	e.t.Helper()
	j, err := journal.Open(e.dir, name, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		if r.Time.IsZero() {
			r.Time = e.clock.Now()
		}
		if r.Run == "" {
			r.Run = fmt.Sprintf("run-%d", r.Time.UnixNano())
		}
		if err := j.Append(r); err != nil {
			e.t.Fatal(err)
		}
	}
}

func code(n int) *int { return &n }

// success records a successful run of gate now.
func (e *env) success(name string) {
	e.record(name, journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeSuccess, Exit: code(0), Started: e.clock.Now()})
}

// failure records a failed run of gate now.
func (e *env) failure(name string, exit int) {
	e.record(name, journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeFailure, Exit: code(exit), Started: e.clock.Now()})
}

func (e *env) cond(name, c string) *Cond {
	e.t.Helper()
	st, err := ReadState(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if st == nil {
		return nil
	}
	return st.cond(name, c)
}

func (e *env) write(name, content string) string {
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}
