package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/watch"
)

// env is a real state dir with gates in varied states, and test doubles
// for the CLI's hooks: Pause and Resume set and clear the pause in the
// real state dir's pauses.json, as cron-gate pause and resume (internal/crongate, pause.go)
// do; a config pause is kept in memory (editing the file
// in place is gateconf's job, tested there).
type env struct {
	t        *testing.T
	dir      string
	mu       sync.Mutex
	gates    map[string]*gate.GateConfig
	crontab  string
	loads    int
	loadErr  error                                                           // set: load fails with it (a config being fixed)
	resumeFn func(cfg *gate.Config, name string, force bool) (string, error) // nil: the double below
}

func newEnv(t testing.TB) *env {
	tt, _ := t.(*testing.T)
	e := &env{t: tt, dir: t.TempDir(), gates: map[string]*gate.GateConfig{}}
	return e
}

func (e *env) declare(g *gate.GateConfig) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gates[g.Name] = g
}

// load builds a fresh config, as reading the file again would.
func (e *env) load() (*gate.Config, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loads++
	if e.loadErr != nil {
		return nil, e.loadErr
	}
	cfg := &gate.Config{Path: filepath.Join(e.dir, "config.toml"), StateDir: e.dir, Gates: map[string]*gate.GateConfig{}}
	for n, g := range e.gates {
		c := *g
		cfg.Gates[n] = &c
	}
	return cfg, nil
}

func (e *env) pause(cfg *gate.Config, name string, p gate.Pause) error {
	return gate.NewPauseFile(gate.StateDirFor(cfg)).Set(context.Background(), name, p)
}

func (e *env) resume(cfg *gate.Config, name string, force bool) (string, error) {
	if e.resumeFn != nil {
		return e.resumeFn(cfg, name, force)
	}
	stateDir := gate.StateDirFor(cfg)
	inConfig := cfg.Gate(name).Paused
	if inConfig && !force {
		return "", fmt.Errorf("gate %s is paused in %s", name, cfg.Path)
	}
	had, err := gate.NewPauseFile(stateDir).Clear(context.Background(), name)
	if err != nil {
		return "", err
	}
	if inConfig {
		e.mu.Lock()
		e.gates[name].Paused = false
		e.mu.Unlock()
	}
	if !had && !inConfig {
		return "gate " + name + " was not paused", nil
	}
	if err := gate.NewPauseFile(stateDir).NoteResumed(name, time.Now()); err != nil {
		return "", err
	}
	return "resumed gate " + name, nil
}

func (e *env) options() Options {
	return Options{
		Load:   e.load,
		Pause:  e.pause,
		Resume: e.resume,
		Crontab: func() (*watch.CronScan, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			return userCrontab([]byte(e.crontab)), nil
		},
		Log: io.Discard,
	}
}

func code(n int) *int { return &n }

// journal appends records to a gate's real journal, as cron-gate does.
func (e *env) journal(t testing.TB, name string, recs ...journal.Record) {
	t.Helper()
	j, err := journal.Open(e.dir, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// run appends a start and an end record.
func (e *env) run(t testing.TB, name string, start time.Time, d time.Duration, outcome string, exit int) {
	t.Helper()
	id := fmt.Sprintf("%s-%d", start.UTC().Format("20060102T150405.000000Z"), 4242)
	e.journal(t, name,
		journal.Record{Run: id, Event: journal.EventStart, Time: start, Pid: 4242, Host: "pi", Argv: []string{"python3", name + ".py"}},
		journal.Record{Run: id, Event: journal.EventEnd, Time: start.Add(d), Pid: 4242, Host: "pi", Outcome: outcome, Exit: code(exit), Started: start, DurationMS: d.Milliseconds()})
}

// running appends a start record of this (live) process.
func (e *env) running(t testing.TB, name string, start time.Time) {
	t.Helper()
	e.journal(t, name, journal.Record{Run: "running-" + name, Event: journal.EventStart, Time: start, Pid: os.Getpid(), ChildPid: os.Getpid(), Host: "pi"})
}

func (e *env) skip(t testing.TB, name string, at time.Time, reason string) {
	t.Helper()
	e.journal(t, name, journal.Record{Run: "skip-" + at.Format("150405"), Event: journal.EventSkip, Time: at, Outcome: journal.OutcomeSkipped, Reason: reason, Exit: code(75)})
}

// output writes an output.log section as gate's output logger does.
func (e *env) output(t testing.TB, name, text string) {
	t.Helper()
	p := filepath.Join(e.dir, "gates", name, "output.log")
	os.MkdirAll(filepath.Dir(p), 0o755)
	s := "=== cron-gate run r1 started 2026-11-29T09:10:00Z\n" + text + "=== cron-gate run r1 ended 2026-11-29T09:10:06Z: failure, exit 3\n"
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture declares six gates in varied states, with a crontab.
func fixture(t testing.TB, e *env, now time.Time) {
	min := time.Minute
	e.declare(&gate.GateConfig{Name: "translate", Interval: 4 * time.Hour, LogOutput: true})
	e.declare(&gate.GateConfig{Name: "ko-followup", Interval: 4 * time.Hour})
	e.declare(&gate.GateConfig{Name: "dependency-classifier", Interval: 30 * min, Paused: true, Reason: "provider quota exhausted"})
	e.declare(&gate.GateConfig{Name: "blog-worker-health", Interval: 5 * min})
	e.declare(&gate.GateConfig{Name: "terms", Interval: 30 * min})
	e.declare(&gate.GateConfig{Name: "newsletter"})
	e.run(t, "translate", now.Add(-3*time.Hour), 12*time.Second, journal.OutcomeSuccess, 0)
	e.run(t, "translate", now.Add(-70*min), 9*time.Second, journal.OutcomeFailure, 3)
	e.output(t, "translate", "translating 3 posts\nTraceback (most recent call last):\nValueError: quota\n")
	e.run(t, "ko-followup", now.Add(-2*time.Hour), 40*time.Second, journal.OutcomeSuccess, 0)
	e.run(t, "dependency-classifier", now.Add(-5*time.Hour), time.Minute, journal.OutcomeSuccess, 0)
	e.run(t, "blog-worker-health", now.Add(-4*min), time.Second, journal.OutcomeSuccess, 0)
	e.running(t, "blog-worker-health", now.Add(-90*time.Second))
	e.skip(t, "terms", now.Add(-20*min), journal.ReasonLegacyLock)
	e.crontab = strings.Join([]string{
		"# the blog's workers",
		"0 */4 * * * cron-gate translate -- python3 translate_worker.py",
		"0 2-22/4 * * * cron-gate ko-followup -- python3 translate_worker.py --followup",
		"15-59/30 * * * * cron-gate dependency-classifier -- withlock --slots 6 -- python3 dependency_classifier.py",
		"*/5 * * * * cron-gate blog-worker-health -- python3 worker_health.py",
		"0,30 8-23 * * mon-fri,sun cron-gate terms -- python3 terms.py",
		"0 9 1-7 * tue#1 cron-gate newsletter -- ./send-newsletter --only-the-first-tuesday-of-the-month",
		"",
	}, "\n")
}

// server starts an httptest server on loopback running the dashboard.
func server(t testing.TB, opts Options) (*httptest.Server, *handler) {
	t.Helper()
	h, err := newHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// browser is what a browser that opened /?token= holds: the session
// cookie (a Cookie header) and the key the page took from the redirect's
// fragment.
type browser struct{ cookie, key string }

// login opens base/?token=TOKEN as a browser would and returns what it
// keeps.
func login(t testing.TB, base, token string) browser {
	t.Helper()
	code, hd, body := do(t, "GET", base+"/?token="+url.QueryEscape(token), nil, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", code, body)
	}
	var b browser
	for _, c := range (&http.Response{Header: hd}).Cookies() {
		if c.Name == sessionCookie && c.MaxAge > 0 {
			b.cookie = c.Name + "=" + c.Value
		}
	}
	key, ok := strings.CutPrefix(hd.Get("Location"), "/#session=")
	if b.cookie == "" || !ok || key == "" {
		t.Fatalf("login: Set-Cookie %q, Location %q", hd.Values("Set-Cookie"), hd.Get("Location"))
	}
	b.key = key
	return b
}

// page returns the headers the page sends with an API request from base:
// the cookie, the key, same-origin proof; plus extra.
func (b browser) page(base string, extra map[string]string) map[string]string {
	m := map[string]string{"Cookie": b.cookie, csrfHeader: b.key, "Origin": base, "Sec-Fetch-Site": "same-origin"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

var browsers sync.Map // *handler -> browser

// browser is a browser logged in to h, served at base (one per handler).
func (h *handler) browser(t testing.TB, base string) browser {
	if b, ok := browsers.Load(h); ok {
		return b.(browser)
	}
	b := login(t, base, h.token)
	browsers.Store(h, b)
	return b
}

// do sends a request and returns the status, headers and body.
func do(t testing.TB, method, url string, body io.Reader, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func writeFileErr(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// pauseFor pauses gate from the command line for d from now, by ops@pi.
func (e *env) pauseFor(t testing.TB, name, reason string, now time.Time, d time.Duration) {
	t.Helper()
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), name, gate.Pause{Reason: reason, Since: now.Add(-time.Hour), Until: now.Add(d), Who: "ops@pi"}); err != nil {
		t.Fatal(err)
	}
}

// pausesNow lists the command-line pauses in the state dir.
func (e *env) pausesNow(t testing.TB) map[string]gate.Pause {
	t.Helper()
	ps, err := gate.NewPauseFile(e.dir).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// userCrontab reads a crontab text as the user's crontab, as
// watch.SystemProbe.Crontabs does.
func userCrontab(tab []byte) *watch.CronScan {
	jobs, _ := watch.ReadCrontab(tab, watch.UserCrontab, false, nil)
	return &watch.CronScan{Where: watch.UserCrontab, Jobs: jobs}
}
