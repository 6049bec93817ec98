package tests

// TestServe and TestServeToken: `cron-gate serve` end to end, through the
// real binaries built by TestMain (cron-gate), a hand-written
// config with comments (testdata/serve/config.toml) and journals made by
// really running gates. The browser part drives Debian's headless
// chromium (tests/browsertest, over chromedp) and checks every click
// against what the real `cron-gate status --json` says afterwards.
//
// Nothing sleeps and hopes: every wait polls an observable (the serve
// process's stdout, the status binary's answer, the page) until a
// deadline, and the deadlines only bound a failure; no assertion is about
// how long something took.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/cronexpr"
	"github.com/crongate/crongate/tests/browsertest"
)

// serveDeadline bounds each wait of these tests (a failure, never a
// measurement): the race-instrumented test binary, chromium and the
// binaries share two cores in CI.
const serveDeadline = 30 * time.Second

// serveEnv is one test's directory, config and environment.
type serveEnv struct {
	dir     string   // the test's temporary directory (symlinks resolved)
	config  string   // dir/config.toml
	origCfg []byte   // the config as written
	env     []string // the binaries' environment
	wrap    []string // if set, serve runs as wrap... cron-gate ... (hidepid_test.go: a private /proc)
}

// newServeEnv writes testdata/serve/config.toml and crontab into a fresh
// directory with @DIR@ replaced, and an environment where nothing of the
// machine's cron-gate (config, state, cache, token) can leak in.
func newServeEnv(t *testing.T) *serveEnv {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &serveEnv{dir: dir, config: filepath.Join(dir, "config.toml")}
	for _, f := range []string{"config.toml", "crontab"} {
		data, err := os.ReadFile(filepath.Join("testdata", "serve", f))
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.ReplaceAll(data, []byte("@DIR@"), []byte(dir))
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if f == "config.toml" {
			e.origCfg = data
		}
	}
	cache := filepath.Join(dir, ".cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRON_GATE_") {
			e.env = append(e.env, kv)
		}
	}
	e.env = append(e.env,
		"CRON_GATE_CONFIG="+filepath.Join(dir, "no-such-config.toml"), // --config is always given
		"CRON_GATE_STATE_DIR="+filepath.Join(dir, "state"),
		"CRON_GATE_CACHE_DIR="+cache,
	)
	return e
}

// run runs the real cron-gate with args and returns its stdout, stderr
// and exit code; a process still running after serveDeadline is killed
// and fails the test.
func (e *serveEnv) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "cron-gate"), args...)
	cmd.Env, cmd.Dir = e.env, e.dir
	var o, er bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &er
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("cron-gate %s: still running after %v, killed; stderr: %s", strings.Join(args, " "), serveDeadline, er.String())
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		code = ee.ExitCode()
	default:
		t.Fatalf("cron-gate %s: %v; stderr: %s", strings.Join(args, " "), err, er.String())
	}
	return o.String(), er.String(), code
}

// gateRun runs `cron-gate --config C NAME -- sh -c SCRIPT` and requires
// exit code want.
func (e *serveEnv) gateRun(t *testing.T, name, script string, want int) {
	t.Helper()
	_, stderr, code := e.run(t, "--config", e.config, name, "--", "sh", "-c", script)
	if code != want {
		t.Fatalf("cron-gate %s -- sh -c %q: exit %d, want %d; stderr: %s", name, script, code, want, stderr)
	}
}

// statusGate is the part of `status --json`'s gate this test reads.
type statusGate struct {
	Name     string `json:"name"`
	Declared bool   `json:"declared"`
	State    string `json:"state"`
	Pause    *struct {
		By     string    `json:"by"`
		Reason string    `json:"reason"`
		Since  time.Time `json:"since"`
		Until  time.Time `json:"until"`
		Who    string    `json:"who"`
	} `json:"pause"`
	LastSkip *struct {
		Reason string `json:"reason"`
	} `json:"last_skip"`
	LastEnd *struct {
		Outcome string `json:"outcome"`
		Exit    *int   `json:"exit"`
	} `json:"last_end"`
}

type statusReport struct {
	V     int          `json:"v"`
	Gates []statusGate `json:"gates"`
}

func (r *statusReport) gate(name string) *statusGate {
	for i := range r.Gates {
		if r.Gates[i].Name == name {
			return &r.Gates[i]
		}
	}
	return nil
}

// states renders the gates as "name=state" in their order.
func (r *statusReport) states() string {
	var s []string
	for _, g := range r.Gates {
		s = append(s, g.Name+"="+g.State)
	}
	return strings.Join(s, " ")
}

// status runs the real `cron-gate --config C status --json`.
func (e *serveEnv) status(t *testing.T) *statusReport {
	t.Helper()
	out, stderr, code := e.run(t, "--config", e.config, "status", "--json")
	if code != 0 {
		t.Fatalf("cron-gate status --json: exit %d; stderr: %s", code, stderr)
	}
	var r statusReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.V != 1 {
		t.Fatalf("cron-gate status --json: %v (v %d): %s", err, r.V, out)
	}
	return &r
}

// waitStatus polls the real `cron-gate status --json` until cond holds.
func (e *serveEnv) waitStatus(t *testing.T, what string, cond func(*statusReport) bool) *statusReport {
	t.Helper()
	var last *statusReport
	deadline := time.Now().Add(serveDeadline)
	for {
		last = e.status(t)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("cron-gate status never showed %s within %v; last: %s", what, serveDeadline, last.states())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// journals makes the gates' history by running them for real:
// translate succeeds then fails with exit 3 (failing), ko-followup
// succeeds (ok), terms is skipped while the test holds its legacy lock
// (skipped, legacy_lock), dependency-classifier is skipped because its
// config pauses it (paused), newsletter never runs (never-run).
func (e *serveEnv) journals(t *testing.T) {
	t.Helper()
	e.gateRun(t, "translate", "echo translated 3 files", 0)
	e.gateRun(t, "translate", "echo 'ValueError: quota exceeded' >&2; exit 3", 3)
	e.gateRun(t, "ko-followup", "echo followed up", 0)
	e.gateRun(t, "dependency-classifier", "echo must not run; exit 9", 75)
	// The old worker's lock, held by this test process with flock(2): an
	// exclusive lock on another open file description, which cron-gate's
	// shared probe sees as held.
	lock, err := os.OpenFile(filepath.Join(e.dir, "terms.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	e.gateRun(t, "terms", "echo must not run; exit 9", 75)
	lock.Close()

	r := e.status(t)
	want := "dependency-classifier=paused ko-followup=ok newsletter=never-run terms=skipped translate=failing"
	if got := sortedStates(r); got != want {
		t.Fatalf("status after the runs: %s, want %s", got, want)
	}
	if g := r.gate("terms"); g.LastSkip == nil || g.LastSkip.Reason != "legacy_lock" {
		t.Fatalf("terms' last skip: %+v", g.LastSkip)
	}
	if g := r.gate("dependency-classifier"); g.Pause == nil || g.Pause.By != "config" || g.Pause.Reason != "provider quota exhausted" {
		t.Fatalf("dependency-classifier's pause: %+v", g.Pause)
	}
	if g := r.gate("translate"); g.LastEnd == nil || g.LastEnd.Outcome != "failure" || g.LastEnd.Exit == nil || *g.LastEnd.Exit != 3 {
		t.Fatalf("translate's last end: %+v", g.LastEnd)
	}
}

func sortedStates(r *statusReport) string {
	var s []string
	for _, g := range r.Gates {
		s = append(s, g.Name+"="+g.State)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// served is a running `cron-gate serve`.
type served struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when Wait returned
	stdout string        // captured output files
	stderr string
	base   string // http://127.0.0.1:PORT (the bound port, reached over loopback)
	host   string // the address it printed
}

func (s *served) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *served) output() string {
	o, _ := os.ReadFile(s.stdout)
	e, _ := os.ReadFile(s.stderr)
	return fmt.Sprintf("stdout: %q; stderr: %q", o, e)
}

// servingLine is what serve prints on stdout once it listens.
var servingLine = regexp.MustCompile(`(?m)^cron-gate: serving the dashboard on http://(\S+)/$`)

// loginLine follows it when no token is configured: the URL with the
// process's action token, which the buttons need.
var loginLine = regexp.MustCompile(`(?m)^cron-gate: to pause and resume from the dashboard, open (http://(\S+)/\?token=([A-Za-z0-9_-]+)) once$`)

// actionToken waits for the login line and returns its token, after
// checking that stdout is exactly the two lines.
func (s *served) actionToken(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(serveDeadline)
	for {
		data, _ := os.ReadFile(s.stdout)
		if m := loginLine.FindSubmatch(data); m != nil {
			if string(m[2]) != s.host {
				t.Errorf("the login URL %s is not on the address served, %s", m[1], s.host)
			}
			if want := "cron-gate: serving the dashboard on http://" + s.host + "/\n" + string(m[0]) + "\n"; string(data) != want {
				t.Errorf("serve's stdout: %q, want %q", data, want)
			}
			return string(m[3])
		}
		if time.Now().After(deadline) || s.exited() {
			t.Fatalf("cron-gate serve printed no login URL within %v; %s", serveDeadline, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startServe starts `cron-gate --config C serve --listen LISTEN` (plus
// extra environment) and waits until it prints the address it listens
// on. When the test ends, a serve still running is killed.
func (e *serveEnv) startServe(t *testing.T, listen string, extraEnv ...string) *served {
	t.Helper()
	s := e.spawnServe(t, listen, extraEnv...)
	deadline := time.Now().Add(serveDeadline)
	for {
		data, _ := os.ReadFile(s.stdout)
		if m := servingLine.FindSubmatch(data); m != nil {
			s.host = string(m[1])
			break
		}
		if s.exited() {
			t.Fatalf("cron-gate serve --listen %s exited (%v) before serving; %s", listen, s.cmd.ProcessState, s.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("cron-gate serve --listen %s printed no address within %v; %s", listen, serveDeadline, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, port, err := net.SplitHostPort(s.host)
	if err != nil {
		t.Fatalf("serve printed %q: %v", s.host, err)
	}
	s.base = "http://" + net.JoinHostPort("127.0.0.1", port)
	return s
}

// spawnServe starts serve without waiting for anything.
func (e *serveEnv) spawnServe(t *testing.T, listen string, extraEnv ...string) *served {
	t.Helper()
	tmp := t.TempDir()
	s := &served{done: make(chan struct{}), stdout: filepath.Join(tmp, "stdout"), stderr: filepath.Join(tmp, "stderr")}
	so, err := os.Create(s.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer so.Close()
	se, err := os.Create(s.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	argv := append(append([]string{}, e.wrap...), filepath.Join(binDir, "cron-gate"), "--config", e.config, "serve", "--listen", listen)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = append(append([]string{}, e.env...), extraEnv...)
	s.cmd.Dir, s.cmd.Stdout, s.cmd.Stderr = e.dir, so, se
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if !s.exited() {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
	return s
}

// wait waits for serve to exit by itself and returns its exit code (-1
// for a death by signal); still running after serveDeadline fails.
func (s *served) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(serveDeadline):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		t.Fatalf("cron-gate serve still running after %v; killed it; %s", serveDeadline, s.output())
	}
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("cron-gate serve was killed by %v; %s", ws.Signal(), s.output())
	}
	return s.cmd.ProcessState.ExitCode()
}

// stop sends SIGTERM and requires a graceful exit 0.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if s.exited() {
		t.Fatalf("cron-gate serve exited early (%v); %s", s.cmd.ProcessState, s.output())
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 0 {
		t.Fatalf("cron-gate serve after SIGTERM: exit %d, want 0; %s", code, s.output())
	}
}

// serveSession is what a browser keeps after opening the login URL: the
// session cookie and the key the page takes from the redirect's fragment.
type serveSession struct{ cookie, key string }

// serveLogin opens base/?token=TOKEN without following the redirect.
func serveLogin(t *testing.T, base, token string) serveSession {
	t.Helper()
	cl := &http.Client{Timeout: serveDeadline, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := cl.Get(base + "/?token=" + url.QueryEscape(token))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var s serveSession
	for _, c := range res.Cookies() {
		if c.Name == "cron_gate_session" && c.MaxAge > 0 {
			s.cookie = c.Name + "=" + c.Value
		}
	}
	key, ok := strings.CutPrefix(res.Header.Get("Location"), "/#session=")
	if res.StatusCode != http.StatusSeeOther || s.cookie == "" || !ok || key == "" || strings.Contains(s.cookie, token) {
		t.Fatalf("login: %d, Set-Cookie %q, Location %q", res.StatusCode, res.Header.Values("Set-Cookie"), res.Header.Get("Location"))
	}
	s.key = key
	return s
}

// httpDo sends one request with the given headers and returns the
// answer and its body.
func httpDo(t *testing.T, method, u string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := &http.Client{Timeout: serveDeadline}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return res, data
}

// TestServe: the real binary serves the dashboard over a state made by
// real runs; its API agrees with `cron-gate status`; in headless chromium
// the buttons pause, resume and force-resume, and each click shows in
// what the real `cron-gate status --json` says and, for force-resume, in
// the config file, whose comments all survive; SIGTERM stops it with 0.
func TestServe(t *testing.T) {
	e := newServeEnv(t)
	e.journals(t)
	srv := e.startServe(t, "127.0.0.1:0")
	if !strings.HasPrefix(srv.host, "127.0.0.1:") || strings.HasSuffix(srv.host, ":0") {
		t.Fatalf("serve printed address %q, want 127.0.0.1 and the port it picked", srv.host)
	}

	t.Run("http", func(t *testing.T) { serveHTTPChecks(t, e, srv) })
	t.Run("browser", func(t *testing.T) { serveBrowserChecks(t, e, srv) })

	srv.stop(t)
}

func serveHTTPChecks(t *testing.T, e *serveEnv, srv *served) {
	// /healthz: no token, no state.
	res, body := httpDo(t, "GET", srv.base+"/healthz", nil, nil)
	if res.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("/healthz: %d %q", res.StatusCode, body)
	}

	// /api/summary against `cron-gate status --json` run at the same
	// moment (nothing changes the state meanwhile): same gates in the
	// same order, same states, the dashboard's time zone.
	res, body = httpDo(t, "GET", srv.base+"/api/summary", nil, nil)
	st := e.status(t)
	if res.StatusCode != 200 {
		t.Fatalf("/api/summary: %d %s", res.StatusCode, body)
	}
	var sum struct {
		V        int          `json:"v"`
		Gates    []statusGate `json:"gates"`
		TimeZone struct {
			Name          string            `json:"name"`
			Abbreviations map[string]string `json:"abbreviations"`
		} `json:"time_zone"`
		Generated string `json:"generated"`
	}
	if err := json.Unmarshal(body, &sum); err != nil || sum.V != 1 {
		t.Fatalf("/api/summary: %v (v %d): %s", err, sum.V, body)
	}
	if got, want := (&statusReport{Gates: sum.Gates}).states(), st.states(); got != want {
		t.Errorf("/api/summary gates: %s\nstatus --json gates:  %s", got, want)
	}
	if len(sum.Gates) != 5 {
		t.Errorf("/api/summary has %d gates, want the 5 declared", len(sum.Gates))
	}
	if sum.TimeZone.Name != "Asia/Seoul" || sum.TimeZone.Abbreviations["+09:00"] != "KST" || !strings.HasSuffix(sum.Generated, "+09:00") {
		t.Errorf("/api/summary's zone: %+v, generated %q", sum.TimeZone, sum.Generated)
	}

	// Headers: nothing about state is cached; the page has its policy.
	for _, p := range []string{"/", "/api/summary", "/metrics", "/healthz"} {
		res, _ := httpDo(t, "GET", srv.base+p, nil, nil)
		if res.StatusCode != 200 {
			t.Errorf("GET %s: %d", p, res.StatusCode)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", p, cc)
		}
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", p, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", p, res.Header)
		}
	}

	// /metrics: the Prometheus exposition, byte for byte what
	// `cron-gate metrics` prints for the same state.
	res, body = httpDo(t, "GET", srv.base+"/metrics", nil, nil)
	cli, stderr, code := e.run(t, "--config", e.config, "metrics")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("/metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if code != 0 {
		t.Fatalf("cron-gate metrics: exit %d: %s", code, stderr)
	}
	sd := `state_dir="` + e.dir + `/state",`
	for _, line := range []string{
		`# TYPE cron_gate_last_exit_code gauge`,
		`cron_gate_last_exit_code{` + sd + `gate="translate"} 3`,
		`cron_gate_skips_total{` + sd + `gate="terms",reason="legacy_lock"} 1`,
		`cron_gate_skips_total{` + sd + `gate="dependency-classifier",reason="paused"} 1`,
		`cron_gate_runs_total{` + sd + `gate="ko-followup",outcome="success"} 1`,
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(body) {
			t.Errorf("/metrics lacks the line %q", line)
		}
	}
	if string(body) != cli {
		t.Errorf("/metrics differs from cron-gate metrics:\n--- /metrics\n%s\n--- cron-gate metrics\n%s", body, cli)
	}

	// No token is configured: reads are open on loopback, state changes
	// need the action token serve printed. Another user of the machine
	// can read the page and send a same-origin request: refused (401,
	// naming the login URL), nothing changes — neither a pause nor the
	// config (force-resume). /api/csrf hands out nothing any more.
	tok := srv.actionToken(t)
	if res, body := httpDo(t, "GET", srv.base+"/api/csrf", nil, nil); res.StatusCode != http.StatusGone {
		t.Errorf("GET /api/csrf: %d %s, want 410", res.StatusCode, body)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/pause", `{"gate":"ko-followup","reason":"forged"}`},
		{"/api/force-resume", `{"gate":"dependency-classifier"}`},
		{"/api/resume", `{"gate":"dependency-classifier"}`},
	} {
		for _, hdr := range []map[string]string{
			{"Content-Type": "application/json", "Origin": srv.base, "Sec-Fetch-Site": "same-origin"},
			{"Content-Type": "application/json", "Origin": srv.base, "Cookie": "cron_gate_session=forged"},
			{"Content-Type": "application/json", "Authorization": "Bearer forged-forged-forged"},
		} {
			res, body = httpDo(t, "POST", srv.base+c.path, strings.NewReader(c.body), hdr)
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "/?token=") || !strings.Contains(string(body), "cron-gate serve printed") {
				t.Errorf("POST %s without the action token %v: %d %s, want 401 naming the login URL", c.path, hdr, res.StatusCode, body)
			}
		}
	}
	// The leaked cookie (issue 12, item 9): a browser logs in with the
	// URL serve printed; its cookie reaches another local service (a
	// browser sends a cookie to every port of its host), which replays
	// it with curl, with whatever CSRF token the page or /api/csrf gives
	// away: refused, and so is the cookie's value as a bearer token.
	login := serveLogin(t, srv.base, tok)
	scraped := ""
	if res, body := httpDo(t, "GET", srv.base+"/api/csrf", nil, map[string]string{"Cookie": login.cookie}); res.StatusCode == 200 {
		var c struct{ Token string }
		json.Unmarshal(body, &c)
		scraped = c.Token
	}
	_, shell := httpDo(t, "GET", srv.base+"/", nil, map[string]string{"Cookie": login.cookie})
	if m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindSubmatch(shell); m != nil {
		scraped = string(m[1])
	}
	if strings.Contains(string(shell), login.key) {
		t.Errorf("the page served to the cookie holds the session's key")
	}
	cookieValue := strings.TrimPrefix(login.cookie, "cron_gate_session=")
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json", "Cookie": login.cookie},
		{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": scraped},
		{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": scraped, "Origin": srv.base},
		{"Content-Type": "application/json", "Authorization": "Bearer " + cookieValue},
		{"Content-Type": "application/json", "Cookie": "cron_gate_token=" + tok, "X-CSRF-Token": scraped},
	} {
		res, body = httpDo(t, "POST", srv.base+"/api/force-resume", strings.NewReader(`{"gate":"dependency-classifier"}`), hdr)
		if res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /api/force-resume with the leaked cookie %v: %d %s, want 403 or 401", hdr, res.StatusCode, body)
		}
	}
	// Without the key, or from another site: 403.
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json", "Cookie": login.cookie, "Origin": srv.base},
		{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key, "Origin": "http://evil.example"},
		{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key},
	} {
		res, body = httpDo(t, "POST", srv.base+"/api/pause", strings.NewReader(`{"gate":"ko-followup","reason":"forged"}`), hdr)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST /api/pause %v: %d %s, want 403", hdr, res.StatusCode, body)
		}
	}
	st = e.status(t)
	if g := st.gate("ko-followup"); g == nil || g.Pause != nil || g.State != "ok" {
		t.Errorf("after the refused POSTs, ko-followup is %+v", g)
	}
	if g := st.gate("dependency-classifier"); g == nil || g.Pause == nil || g.Pause.By != "config" {
		t.Errorf("after the refused POSTs, dependency-classifier is %+v", g)
	}
	if got, _ := os.ReadFile(e.config); !bytes.Equal(got, e.origCfg) {
		t.Errorf("a refused force-resume changed the config:\n%s", lineDiff(e.origCfg, got))
	}
	// The browser's own page (cookie, key, same origin) may; a pause
	// reason with a bidi override is refused there too (item 7). After
	// logout the session is refused.
	page := map[string]string{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key, "Origin": srv.base}
	res, body = httpDo(t, "POST", srv.base+"/api/pause", strings.NewReader(`{"gate":"newsletter","reason":"until Jan 1, 2025\u202e"}`), page)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "bidirectional control (U+202E)") {
		t.Errorf("POST /api/pause with a bidi override: %d %s, want 400", res.StatusCode, body)
	}
	res, body = httpDo(t, "POST", srv.base+"/api/pause", strings.NewReader(`{"gate":"newsletter","reason":"by the page"}`), page)
	if g := e.status(t).gate("newsletter"); res.StatusCode != 200 || g == nil || g.Pause == nil || g.Pause.Reason != "by the page" {
		t.Errorf("POST /api/pause from the logged-in page: %d %s; newsletter %+v", res.StatusCode, body, g)
	}
	if res, body := httpDo(t, "POST", srv.base+"/api/logout", nil, page); res.StatusCode != 200 {
		t.Errorf("POST /api/logout: %d %s", res.StatusCode, body)
	}
	res, body = httpDo(t, "POST", srv.base+"/api/resume", strings.NewReader(`{"gate":"newsletter"}`), page)
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /api/resume after logout: %d %s, want 401", res.StatusCode, body)
	}
	// With the action token as a bearer (a script): accepted.
	res, body = httpDo(t, "POST", srv.base+"/api/pause", strings.NewReader(`{"gate":"newsletter","reason":"holiday"}`),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + tok})
	if res.StatusCode != 200 {
		t.Errorf("POST /api/pause with the action token: %d %s", res.StatusCode, body)
	}
	if g := e.status(t).gate("newsletter"); g == nil || g.Pause == nil || g.Pause.Reason != "holiday" {
		t.Errorf("newsletter after the pause with the action token: %+v", g)
	}
	res, body = httpDo(t, "POST", srv.base+"/api/resume", strings.NewReader(`{"gate":"newsletter"}`),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + tok})
	if g := e.status(t).gate("newsletter"); res.StatusCode != 200 || g == nil || g.Pause != nil || g.State != "never-run" {
		t.Errorf("POST /api/resume with the action token: %d %s; newsletter %+v", res.StatusCode, body, g)
	}
	// A GET on a POST route is 405, not a state change.
	res, _ = httpDo(t, "GET", srv.base+"/api/pause?gate=ko-followup", nil, nil)
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/pause: %d, want 405", res.StatusCode)
	}
}

// rowState is the state badge's text in a gate's row ("" without a row).
// rowStateJS reads the status state a row shows (its badge says more:
// stale, overrun, error).
const rowStateJS = `const b = document.querySelector('tr.gate[data-gate="' + arguments[0] + '"] td.col-state .state'); return b ? b.dataset.state : "";`

// pageOrder is the order of the dashboard's rows: problems first, then
// the status's order (by name) within each.
var pageOrder = map[string]int{"failing": 0, "error": 0, "blocked": 1, "skipped": 4, "paused": 5, "running": 6, "ok": 7, "never-run": 8}

func serveBrowserChecks(t *testing.T, e *serveEnv, srv *served) {
	wd := browsertest.Start(t, 1500, 800)
	// Log in with the address serve printed: the buttons need it.
	wd.Open(srv.base + "/?token=" + srv.actionToken(t))

	// One row per gate, problems first, each with status's state.
	st := e.status(t)
	var names []string
	browsertest.WaitFor(t, "one row per gate", serveDeadline, func() bool {
		wd.Eval(`return Array.from(document.querySelectorAll('tr.gate')).map(r => r.dataset.gate);`, &names)
		return len(names) == len(st.Gates)
	})
	gates := append([]statusGate(nil), st.Gates...)
	sort.SliceStable(gates, func(i, j int) bool { return pageOrder[gates[i].State] < pageOrder[gates[j].State] })
	for i, g := range gates {
		if names[i] != g.Name {
			t.Fatalf("rows %v, want the gates of cron-gate status problems first: %s", names, st.states())
		}
		var state string
		wd.Eval(rowStateJS, &state, g.Name)
		if state != g.State {
			t.Errorf("row %s shows state %q, cron-gate status says %q", g.Name, state, g.State)
		}
	}
	row := func(name string) string {
		var s string
		wd.Eval(`const r = document.querySelector('tr.gate[data-gate="' + arguments[0] + '"]'); return r ? r.innerText : "";`, &s, name)
		return s
	}
	for name, want := range map[string][]string{
		"translate":             {"failing", "failure 3", "KST", "every 4 hours from 00:00"},
		"dependency-classifier": {"paused", "config: provider quota exhausted", "force-resume"},
		"terms":                 {"skipped", "legacy_lock"},
		"ko-followup":           {"ok", "pause"},
		"newsletter":            {"never-run", "on days 1-7 of the month and on Tuesday"},
	} {
		txt := row(name)
		for _, w := range want {
			if !strings.Contains(txt, w) {
				t.Errorf("row %s lacks %q:\n%s", name, w, txt)
			}
		}
	}
	// Times in the configured zone, the full timestamp in the tooltip.
	var title string
	wd.Eval(`return document.querySelector('tr.gate[data-gate="translate"] td.col-success span[title]').title;`, &title)
	if ts, err := time.Parse(time.RFC3339Nano, title); err != nil || !strings.HasSuffix(title, "+09:00") || ts.IsZero() {
		t.Errorf("translate's success time tooltip %q: %v", title, err)
	}

	// Pause ko-followup with the button: a reason and 2h; the real
	// `cron-gate status` then shows a command pause with that reason,
	// until two hours after the click.
	const reason = "rebuilding the index"
	wd.Click(`tr.gate[data-gate="ko-followup"] button.pause`)
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=reason]`, reason)
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=duration]`, "2h")
	before := time.Now().Truncate(time.Second)
	wd.Click(`tr.form[data-gate="ko-followup"] button.pause-confirm`)
	st = e.waitStatus(t, "ko-followup paused from the dashboard", func(r *statusReport) bool {
		g := r.gate("ko-followup")
		return g != nil && g.Pause != nil
	})
	after := time.Now()
	g := st.gate("ko-followup")
	if g.State != "paused" || g.Pause.By != "command" || g.Pause.Reason != reason || g.Pause.Who == "" {
		t.Errorf("ko-followup after the pause click: state %s, pause %+v", g.State, *g.Pause)
	}
	if lo, hi := before.Add(2*time.Hour), after.Add(2*time.Hour); g.Pause.Until.Before(lo) || g.Pause.Until.After(hi) {
		t.Errorf("ko-followup paused until %s, want 2h after the click: between %s and %s", g.Pause.Until, lo, hi)
	}
	browsertest.WaitFor(t, "the row to show the pause", serveDeadline, func() bool {
		txt := row("ko-followup")
		return strings.Contains(txt, "command: "+reason) && strings.Contains(txt, "until") && strings.Contains(txt, "KST")
	})

	// Resume it: status shows it unpaused, ok again.
	wd.Click(`tr.gate[data-gate="ko-followup"] button.resume`)
	st = e.waitStatus(t, "ko-followup resumed from the dashboard", func(r *statusReport) bool {
		g := r.gate("ko-followup")
		return g != nil && g.Pause == nil
	})
	if g := st.gate("ko-followup"); g.State != "ok" {
		t.Errorf("ko-followup after resume: %s", g.State)
	}
	browsertest.WaitFor(t, "ko-followup's row to show ok", serveDeadline, func() bool {
		var s string
		wd.Eval(rowStateJS, &s, "ko-followup")
		return s == "ok"
	})

	// Force-resume the gate the config pauses: the page asks first; OK
	// sets paused = false in the file. Status shows it unpaused, and the
	// file is byte for byte what it was but for that one value.
	wd.Click(`tr.gate[data-gate="dependency-classifier"] button.force-resume`)
	var question string
	browsertest.WaitFor(t, "the confirmation dialog", serveDeadline, func() bool {
		var ok bool
		question, ok = wd.AlertText()
		return ok
	})
	if !strings.Contains(question, "dependency-classifier") || !strings.Contains(question, "paused = false") {
		t.Errorf("force-resume asks %q", question)
	}
	wd.AcceptAlert()
	st = e.waitStatus(t, "dependency-classifier force-resumed from the dashboard", func(r *statusReport) bool {
		g := r.gate("dependency-classifier")
		return g != nil && g.Pause == nil && g.State != "paused"
	})
	if g := st.gate("dependency-classifier"); g.State != "never-run" {
		t.Errorf("dependency-classifier after force-resume: %s, want never-run (it has only a paused skip: it never tried, and a resumed gate never looks skipped for its pause)", g.State)
	}
	const pausedLine = "\npaused = true  # quota\n"
	if bytes.Count(e.origCfg, []byte(pausedLine)) != 1 {
		t.Fatalf("the fixture must say %q once", pausedLine)
	}
	want := bytes.Replace(e.origCfg, []byte(pausedLine), []byte("\npaused = false  # quota\n"), 1)
	got, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the config after force-resume is not the original with paused = false:\n%s", lineDiff(want, got))
	}
	if fi, err := os.Stat(e.config); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the config's mode after force-resume: %v %v, want 0644", fi.Mode(), err)
	}
	browsertest.WaitFor(t, "dependency-classifier's row to lose its force-resume", serveDeadline, func() bool {
		var n int
		wd.Eval(`return document.querySelectorAll('tr.gate[data-gate="dependency-classifier"] button.force-resume').length;`, &n)
		var s string
		wd.Eval(rowStateJS, &s, "dependency-classifier")
		return n == 0 && s == "never-run"
	})
	// The gate now runs, as cron would run it.
	e.gateRun(t, "dependency-classifier", "echo classified", 0)

	for _, m := range wd.ConsoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// lineDiff shows the lines that differ, for a failure message.
func lineDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d: want %q\n        got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// TestServeToken: off loopback, serve starts only with a token, and a
// token file others can read is refused; with a good token file the API
// answers only requests that carry it.
func TestServeToken(t *testing.T) {
	e := newServeEnv(t)
	e.journals(t)
	const token = "3f9a1c0e7b5d2a4868c1e0f7a9b3d5c2"

	// No token at all: 125, the error, then a hint naming both places.
	s := e.spawnServe(t, "0.0.0.0:0")
	if code := s.wait(t); code != 125 {
		t.Fatalf("serve --listen 0.0.0.0:0 without a token: exit %d, want 125; %s", code, s.output())
	}
	errOut, _ := os.ReadFile(s.stderr)
	lines := strings.Split(strings.TrimRight(string(errOut), "\n"), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "cron-gate: serve: ") || !strings.Contains(lines[0], "0.0.0.0:0") || !strings.Contains(lines[0], "token is required") ||
		!strings.HasPrefix(lines[1], "cron-gate: hint: ") || !strings.Contains(lines[1], "$CRON_GATE_TOKEN") || !strings.Contains(lines[1], "token_file") {
		t.Errorf("serve without a token: stderr %q, want an error line and a hint line", errOut)
	}
	if out, _ := os.ReadFile(s.stdout); len(out) != 0 {
		t.Errorf("serve without a token printed on stdout: %q", out)
	}

	// A token file group and others can read: 125, naming the file.
	tokFile := filepath.Join(e.dir, "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokFile, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	cfg := bytes.Replace(e.origCfg, []byte("[serve]\n"), []byte(fmt.Sprintf("[serve]\ntoken_file = %q   # chmod 600\n", tokFile)), 1)
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	s = e.spawnServe(t, "0.0.0.0:0")
	if code := s.wait(t); code != 125 {
		t.Fatalf("serve with a 0644 token_file: exit %d, want 125; %s", code, s.output())
	}
	errOut, _ = os.ReadFile(s.stderr)
	if !strings.HasPrefix(string(errOut), "cron-gate: serve: token_file "+tokFile+" ") || !strings.Contains(string(errOut), "0644") {
		t.Errorf("serve with a 0644 token_file: stderr %q, want an error naming %s and its mode", errOut, tokFile)
	}

	// Mode 0600: it serves off loopback; the API wants the token.
	if err := os.Chmod(tokFile, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := e.startServe(t, "0.0.0.0:0")
	// A configured token is never printed: no login line.
	if out, _ := os.ReadFile(srv.stdout); string(out) != "cron-gate: serving the dashboard on http://"+srv.host+"/\n" {
		t.Errorf("serve with a token printed %q", out)
	}
	for _, c := range []struct {
		hdr  map[string]string
		want []int
	}{
		{nil, []int{http.StatusUnauthorized, http.StatusForbidden}},
		{map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, []int{http.StatusUnauthorized, http.StatusForbidden}},
		{map[string]string{"Authorization": "Bearer " + token}, []int{http.StatusOK}},
	} {
		for _, p := range []string{"/api/summary", "/metrics", "/"} {
			res, body := httpDo(t, "GET", srv.base+p, nil, c.hdr)
			ok := false
			for _, w := range c.want {
				ok = ok || res.StatusCode == w
			}
			if !ok {
				t.Errorf("GET %s with %v: %d %s, want %v", p, c.hdr, res.StatusCode, short(string(body), 200), c.want)
			}
		}
	}
	// The summary behind the token is the real one.
	res, body := httpDo(t, "GET", srv.base+"/api/summary", nil, map[string]string{"Authorization": "Bearer " + token})
	var sum statusReport
	if err := json.Unmarshal(body, &sum); err != nil || res.StatusCode != 200 || sum.states() != e.status(t).states() {
		t.Errorf("/api/summary with the token: %d %v %s", res.StatusCode, err, sum.states())
	}
	// /healthz needs no token, even off loopback.
	if res, _ := httpDo(t, "GET", srv.base+"/healthz", nil, nil); res.StatusCode != 200 {
		t.Errorf("/healthz without the token: %d", res.StatusCode)
	}
	// With a token, a bearer POST needs no CSRF token and works.
	res, body = httpDo(t, "POST", srv.base+"/api/pause", strings.NewReader(url.Values{"gate": {"newsletter"}, "reason": {"holiday"}}.Encode()),
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/x-www-form-urlencoded"})
	if res.StatusCode != 200 {
		t.Errorf("bearer POST /api/pause: %d %s", res.StatusCode, body)
	}
	if g := e.status(t).gate("newsletter"); g == nil || g.Pause == nil || g.Pause.Reason != "holiday" {
		t.Errorf("newsletter after the bearer pause: %+v", g)
	}
	srv.stop(t)

	// $CRON_GATE_TOKEN is taken too (and before the file).
	if err := os.WriteFile(e.config, e.origCfg, 0o644); err != nil {
		t.Fatal(err)
	}
	srv = e.startServe(t, "0.0.0.0:0", "CRON_GATE_TOKEN="+token)
	if res, _ := httpDo(t, "GET", srv.base+"/api/summary", nil, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("$CRON_GATE_TOKEN: GET /api/summary without it: %d, want 401", res.StatusCode)
	}
	if res, _ := httpDo(t, "GET", srv.base+"/api/summary", nil, map[string]string{"Authorization": "Bearer " + token}); res.StatusCode != 200 {
		t.Errorf("$CRON_GATE_TOKEN: GET /api/summary with it: %d, want 200", res.StatusCode)
	}
	srv.stop(t)
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestServeCronZone: next run times follow the zone cron runs jobs in —
// the system's, /etc/localtime (UTC without it) — not the $TZ of whoever
// started serve, nor the zone the page shows times in.
func TestServeCronZone(t *testing.T) {
	sys := time.UTC
	if data, err := os.ReadFile("/etc/localtime"); err == nil {
		if sys, err = time.LoadLocationFromTZData("system", data); err != nil {
			t.Fatalf("/etc/localtime: %v", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	// A $TZ whose hours differ from the system's for "0 */4 * * *": an
	// offset of 5:45 is nobody's but Nepal's.
	tzName := "Asia/Kathmandu"
	if _, off := time.Now().In(sys).Zone(); off == 5*3600+45*60 {
		tzName = "Asia/Seoul"
	}
	tz, err := time.LoadLocation(tzName)
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	e := newServeEnv(t)
	srv := e.startServe(t, "127.0.0.1:0", "TZ="+tzName)
	res, body := httpDo(t, "GET", srv.base+"/api/summary", nil, nil)
	var sum struct {
		Generated time.Time `json:"generated"`
		Gates     []struct {
			Name      string `json:"name"`
			Schedules []struct {
				Expr string    `json:"expr"`
				Next time.Time `json:"next"`
			} `json:"schedules"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(body, &sum); err != nil || res.StatusCode != 200 {
		t.Fatalf("/api/summary: %d %v: %s", res.StatusCode, err, body)
	}
	n := 0
	for _, g := range sum.Gates {
		for _, sc := range g.Schedules {
			s, err := cronexpr.Parse(sc.Expr)
			if err != nil {
				continue // a line cron does not read: no next time
			}
			n++
			want := s.Next(sum.Generated, sys)
			if !sc.Next.Equal(want) {
				t.Errorf("gate %s, %q: next %s, want %s (cron's zone, /etc/localtime: %s; $TZ would give %s)",
					g.Name, sc.Expr, sc.Next, want.In(sys), sys, s.Next(sum.Generated, tz).In(sys))
			}
			if sc.Expr == "0 */4 * * *" && want.Equal(s.Next(sum.Generated, tz)) {
				t.Fatalf("the test cannot tell %s from %s", sys, tz)
			}
		}
	}
	if n < 4 {
		t.Errorf("%d schedules with a next time, want 4", n)
	}
	srv.stop(t)
}
