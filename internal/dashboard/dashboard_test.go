package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

func seoul(t testing.TB) *time.Location {
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatalf("tzdata: %v", err)
	}
	return loc
}

func getSummary(t testing.TB, base string, hdr map[string]string) *Summary {
	t.Helper()
	code, h, body := do(t, "GET", base+"/api/summary", nil, hdr)
	if code != 200 {
		t.Fatalf("GET /api/summary: %d %s", code, body)
	}
	if h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("headers: %v", h)
	}
	var s Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func gateOf(t testing.TB, s *Summary, name string) *GateSummary {
	t.Helper()
	for i := range s.Gates {
		if s.Gates[i].Name == name {
			return &s.Gates[i]
		}
	}
	t.Fatalf("no gate %s in the summary", name)
	return nil
}

// TestSummaryCronIgnores: a crontab with a line Debian's cron cannot
// read is ignored whole; every schedule in it says so and names its
// line, and none gives a next run.
func TestSummaryCronIgnores(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	fixture(t, e, now)
	e.crontab = "0 */4 * * * cron-gate translate -- x\n15/30 * * * * cron-gate dependency-classifier -- y\n"
	srv, _ := server(t, e.options())
	s := getSummary(t, srv.URL, nil)
	tr, dc := gateOf(t, s, "translate"), gateOf(t, s, "dependency-classifier")
	if len(tr.Schedules) != 1 || tr.Schedules[0].Source != "crontab -l:1" || !tr.Schedules[0].Next.IsZero() ||
		!strings.Contains(tr.Schedules[0].Error, "cron does not run this line: cron ignores the whole file: line 2: bad minute") ||
		tr.NextRunFrom == "crontab" {
		t.Errorf("translate: %+v", tr.Schedules)
	}
	if len(dc.Schedules) != 1 || !strings.Contains(dc.Schedules[0].Error, "bad minute: minute field \"15/30\"") ||
		dc.Cadence != "15/30 * * * * (cron ignores it)" {
		t.Errorf("dependency-classifier: %+v, cadence %q", dc.Schedules, dc.Cadence)
	}
}

func TestSummary(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	fixture(t, e, now)
	// The watchdog's memory: translate's failure alerted.
	st := `{"v":1,"updated":"` + now.Add(-2*time.Minute).UTC().Format(time.RFC3339) + `","checks":12,"gates":{"translate":{"conditions":{"failed":{"bad":true,"count":3,"since":"2026-11-29T09:15:00Z","last_bad":"2026-11-29T09:25:00Z","detail":"the last run ended: failure, exit 3","alerted":["stderr"]}}}}}`
	writeFile(t, e.dir+"/"+watch.StateFile, st)
	opts := e.options()
	opts.TimeZone = seoul(t)
	opts.CronTimeZone = seoul(t)
	srv, _ := server(t, opts)
	s := getSummary(t, srv.URL, nil)

	if s.V != 1 || s.StateDir != e.dir || s.TimeZone.Name != "Asia/Seoul" || s.TimeZone.Abbreviations["+09:00"] != "KST" {
		t.Fatalf("summary head: v %d, state dir %s, zone %+v", s.V, s.StateDir, s.TimeZone)
	}
	if s.Watchdog == nil || s.Watchdog.Checks != 12 {
		t.Fatalf("watchdog: %+v", s.Watchdog)
	}
	if len(s.Gates) != 6 {
		t.Fatalf("%d gates", len(s.Gates))
	}
	want := map[string]string{"translate": "failing", "ko-followup": "ok", "dependency-classifier": "paused",
		"blog-worker-health": "running", "terms": "skipped", "newsletter": "never-run"}
	for n, st := range want {
		if g := gateOf(t, s, n); g.State != st {
			t.Errorf("gate %s: state %s, want %s", n, g.State, st)
		}
	}
	tr := gateOf(t, s, "translate")
	if tr.Cadence != "every 4 hours from 00:00" || tr.NextRunFrom != "crontab" || tr.NextRun.IsZero() || !tr.LogOutput {
		t.Errorf("translate: cadence %q, next %v from %q", tr.Cadence, tr.NextRun, tr.NextRunFrom)
	}
	if _, off := tr.LastFailure.Time.Zone(); off != 9*3600 {
		t.Errorf("times are not in KST: %v", tr.LastFailure.Time)
	}
	if !tr.NextRun.After(now) || tr.NextRun.Sub(now) > 4*time.Hour {
		t.Errorf("translate: next run %v", tr.NextRun)
	}
	var failed *Condition
	for i, c := range tr.Conditions {
		if c.Condition == watch.CondFailed {
			failed = &tr.Conditions[i]
		}
	}
	if failed == nil || failed.State != "alerted" || !failed.Bad || failed.Count != 3 {
		t.Errorf("translate conditions: %+v", tr.Conditions)
	}
	dc := gateOf(t, s, "dependency-classifier")
	if !dc.ConfigPaused || dc.Pause == nil || dc.Pause.By != gate.ByConfig || dc.Cadence != "every 30 minutes from :15" {
		t.Errorf("dependency-classifier: %+v", dc)
	}
	// "tue#1" is not "the first Tuesday" to Debian's cron: it reads
	// "tue" and skips "#1", and with the OR rule of the day fields the
	// line runs on days 1-7 and on every Tuesday. Every schedule names
	// its crontab and line.
	nl := gateOf(t, s, "newsletter")
	if len(nl.Schedules) != 1 || nl.Schedules[0].Error != "" || nl.Schedules[0].Source != "crontab -l:7" ||
		nl.Cadence != "at 09:00 on days 1-7 of the month and on Tuesday" {
		t.Errorf("newsletter: %+v, cadence %q", nl.Schedules, nl.Cadence)
	}
	if sc := tr.Schedules; len(sc) != 1 || sc[0].Source != "crontab -l:2" || sc[0].Line != 2 {
		t.Errorf("translate schedules: %+v", sc)
	}
	bw := gateOf(t, s, "blog-worker-health")
	if len(bw.Running) != 1 || bw.Cadence != "every 5 minutes" {
		t.Errorf("blog-worker-health: %+v", bw)
	}

	// The same field names as `cron-gate status --json`: every key of
	// the status report's gate is in the summary's.
	rep, err := gate.Status(mustLoad(t, e), gate.Pauses{}, now)
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil)
	var raw struct{ Gates []map[string]any }
	json.Unmarshal([]byte(body), &raw)
	if code != 200 || len(raw.Gates) != len(rep.Gates) {
		t.Fatalf("raw summary: %d", code)
	}
	for i, g := range rep.Gates {
		data, _ := json.Marshal(g)
		var m map[string]any
		json.Unmarshal(data, &m)
		for k := range m {
			if _, ok := raw.Gates[i][k]; !ok {
				t.Errorf("gate %s: status field %q missing from the summary", g.Name, k)
			}
		}
	}
}

func mustLoad(t testing.TB, e *env) *gate.Config {
	cfg, err := e.load()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := writeFileErr(p, s); err != nil {
		t.Fatal(err)
	}
}

func TestEndpoints(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	srv, _ := server(t, e.options())

	code, h, body := do(t, "GET", srv.URL+"/healthz", nil, nil)
	if code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	for _, hdr := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"} {
		if h.Get(hdr) == "" {
			t.Errorf("no %s header", hdr)
		}
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") {
		t.Errorf("CSP: %s", h.Get("Content-Security-Policy"))
	}

	code, h, body = do(t, "GET", srv.URL+"/", nil, nil)
	if code != 200 || !strings.Contains(body, `<script src="/assets/app.js"`) || strings.Contains(body, "<script>") || h.Get("Cache-Control") != "no-store" {
		t.Errorf("page: %d %v", code, h)
	}
	for _, a := range []string{"/assets/app.js", "/assets/app.css"} {
		code, h, body = do(t, "GET", srv.URL+a, nil, nil)
		if code != 200 || len(body) < 100 || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", a, code, h)
		}
	}

	code, h, body = do(t, "GET", srv.URL+"/metrics", nil, nil)
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain; version=0.0.4") ||
		!strings.Contains(body, `gate="translate",state="failing"} 1`) {
		t.Errorf("metrics: %d %v\n%s", code, h, body)
	}

	code, _, body = do(t, "GET", srv.URL+"/api/output?gate=translate", nil, nil)
	if code != 200 || !strings.Contains(body, "ValueError: quota") {
		t.Errorf("output: %d %s", code, body)
	}
	code, _, body = do(t, "GET", srv.URL+"/api/output?gate=../etc", nil, nil)
	if code != 400 || !strings.Contains(body, `"error"`) || strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("output of a bad name: %d %s", code, body)
	}

	code, _, body = do(t, "GET", srv.URL+"/nope", nil, nil)
	if code != 404 || body != "cron-gate serve: no such page: /nope\n" {
		t.Errorf("unknown path: %d %s", code, body)
	}
	// No token for whoever asks: /api/csrf is gone.
	code, _, body = do(t, "GET", srv.URL+"/api/csrf", nil, nil)
	if code != 410 || !strings.Contains(body, "Authorization: Bearer") {
		t.Errorf("csrf: %d %s", code, body)
	}
}

func TestMethods(t *testing.T) {
	e := newEnv(t)
	srv, h := server(t, e.options())
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/api/pause", "POST"},
		{"PUT", "/api/resume", "POST"},
		{"DELETE", "/api/force-resume", "POST"},
		{"POST", "/api/summary", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
		{"PATCH", "/healthz", "GET, HEAD"},
	} {
		code, hd, body := do(t, c.method, srv.URL+c.path, nil, h.browser(t, srv.URL).page(srv.URL, nil))
		if code != 405 || hd.Get("Allow") != c.allow || body == "" {
			t.Errorf("%s %s: %d, Allow %q, %q", c.method, c.path, code, hd.Get("Allow"), body)
		}
	}
	if code, _, body := do(t, "HEAD", srv.URL+"/healthz", nil, nil); code != 200 || body != "" {
		t.Errorf("HEAD /healthz: %d %q", code, body)
	}
}

// post sends an action as a browser on the page would, logged in (the
// session cookie /?token= sets) and sending the session's key.
func post(t testing.TB, base, path string, h *handler, form url.Values) (int, string) {
	t.Helper()
	code, _, body := do(t, "POST", base+path, strings.NewReader(form.Encode()),
		h.browser(t, base).page(base, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}))
	return code, body
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	fixture(t, e, now)
	srv, h := server(t, e.options())

	code, body := post(t, srv.URL, "/api/pause", h, url.Values{"gate": {"translate"}, "reason": {"quota"}, "duration": {"2h"}})
	if code != 200 || !strings.Contains(body, "paused gate translate until") {
		t.Fatalf("pause: %d %s", code, body)
	}
	ps, err := gate.NewPauseFile(e.dir).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ps["translate"]
	if !ok || p.Reason != "quota" || p.By != gate.ByCommand || p.Until.Sub(now) < 119*time.Minute || !strings.Contains(p.Who, "dashboard") {
		t.Fatalf("pause recorded: %+v", ps)
	}
	if g := gateOf(t, getSummary(t, srv.URL, nil), "translate"); g.State != gate.StatePaused || g.Pause.Reason != "quota" {
		t.Fatalf("summary after pause: %+v", g.Pause)
	}

	// JSON works as well as a form.
	code, _, body = do(t, "POST", srv.URL+"/api/resume", strings.NewReader(`{"gate":"translate"}`),
		h.browser(t, srv.URL).page(srv.URL, map[string]string{"Content-Type": "application/json"}))
	if code != 200 || !strings.Contains(body, "resumed gate translate") {
		t.Fatalf("resume: %d %s", code, body)
	}
	if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
		t.Fatalf("pauses after resume: %+v", ps)
	}

	// A config pause: resume refuses (409), force-resume lifts it.
	code, body = post(t, srv.URL, "/api/resume", h, url.Values{"gate": {"dependency-classifier"}})
	if code != 409 || !strings.Contains(body, "force-resume") {
		t.Fatalf("resume of a config pause: %d %s", code, body)
	}
	code, body = post(t, srv.URL, "/api/force-resume", h, url.Values{"gate": {"dependency-classifier"}})
	if code != 200 {
		t.Fatalf("force-resume: %d %s", code, body)
	}
	if g := gateOf(t, getSummary(t, srv.URL, nil), "dependency-classifier"); g.State == gate.StatePaused || g.ConfigPaused || g.ResumedAt.IsZero() {
		t.Fatalf("after force-resume (the cached config must be dropped): %+v", g)
	}

	// A hook that fails: 500 with its message on one line.
	e.resumeFn = func(*gate.Config, string, bool) (string, error) {
		return "", errors.New("config /etc/x.toml could not be changed:\nread-only file system")
	}
	code, body = post(t, srv.URL, "/api/force-resume", h, url.Values{"gate": {"translate"}})
	if code != 500 || !strings.Contains(body, "resume gate translate: config /etc/x.toml could not be changed: read-only") {
		t.Fatalf("failing hook: %d %s", code, body)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	srv, h := server(t, e.options())
	for _, c := range []struct {
		path, ctype, body string
		code              int
		want              string
	}{
		{"/api/pause", "application/x-www-form-urlencoded", "gate=../../etc", 400, "contains '/'"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=", 400, "gate name is empty"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=pause", 400, "reserved"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=x%00y", 400, "control character"},
		{"/api/resume", "application/json", `{"gate":".hidden"}`, 400, "starts with '.'"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=soon", 400, "is not a duration like 30m"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=-5m", 400, "not positive"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=0s", 400, "not positive"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=9999d", 400, "longer than 366 days"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=99999999999h", 400, "not a duration"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&until=2001-01-01T00:00:00Z", 400, "in the past"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&until=tomorrow", 400, "RFC 3339"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&duration=1h&until=2099-01-01T00:00:00Z", 400, "not both"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&reason=two%0Alines", 400, "contains a line break (U+000A)"},
		// Bidi controls (issue 12, item 7): a reason that would show
		// another date than the real "until" next to it.
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&reason=Jan+1%2C+2025%E2%80%AE", 400, "contains a bidirectional control (U+202E)"},
		{"/api/pause", "application/json", `{"gate":"a","reason":"x\u2066y"}`, 400, "contains a bidirectional control (U+2066)"},
		{"/api/pause", "application/json", `{"gate":"a","reason":"x\u200fy"}`, 400, "contains a bidirectional control (U+200F)"},
		{"/api/pause", "application/json", `{"gate":"a","reason":"\ufeffx"}`, 400, "byte order mark"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&reason=" + strings.Repeat("x", 501), 400, "at most 500"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&gate=b", 400, "given 2 times"},
		{"/api/resume", "application/x-www-form-urlencoded", "gate=a&reason=x", 400, "for pause only"},
		{"/api/pause", "application/json", `{"gate":"a","extra":1}`, 400, "unknown field"},
		{"/api/pause", "application/json", `{"gate":"a"}{"gate":"b"}`, 400, "more than one"},
		{"/api/pause", "application/json", `[1,2]`, 400, "not a JSON object"},
		{"/api/pause", "application/json", `{"gate":"a"`, 400, "not a JSON object"},
		{"/api/pause", "text/plain", "gate=a", 415, "not accepted"},
		{"/api/pause", "", "gate=a", 415, "not accepted"},
		{"/api/pause", "application/x-www-form-urlencoded", "gate=a&reason=" + strings.Repeat("x", maxBody), 413, "larger than"},
	} {
		hdr := h.browser(t, srv.URL).page(srv.URL, nil)
		if c.ctype != "" {
			hdr["Content-Type"] = c.ctype
		}
		code, _, body := do(t, "POST", srv.URL+c.path, strings.NewReader(c.body), hdr)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %s %q: %d %s, want %d with %q", c.path, safetext.Cut(c.body, 60), code, strings.TrimSpace(body), c.code, c.want)
		}
		var msg struct{ Error string }
		if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Error == "" || strings.ContainsAny(msg.Error, "\n\r") {
			t.Errorf("POST %s %q: the error is not one JSON line: %q", c.path, safetext.Cut(c.body, 60), body)
		}
	}
	if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
		t.Fatalf("a bad request changed the pauses: %v", ps)
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t)
	srv, h := server(t, e.options())
	b := h.browser(t, srv.URL)
	form := "gate=translate&reason=x"
	ct := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"no key", map[string]string{"Cookie": b.cookie, "Content-Type": ct, "Origin": srv.URL}, "missing or wrong X-CSRF-Token"},
		{"wrong key", map[string]string{"Cookie": b.cookie, "Content-Type": ct, "Origin": srv.URL, csrfHeader: b.key + "x"}, "missing or wrong"},
		{"no origin proof", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key}, "carries no Sec-Fetch-Site, Origin or Referer"},
		{"cross-site fetch", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Sec-Fetch-Site": "cross-site"}, "cross-site request refused"},
		{"same-site fetch", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Sec-Fetch-Site": "same-site"}, "cross-site request refused"},
		{"navigation", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Sec-Fetch-Site": "none"}, "cross-site request refused"},
		{"foreign origin", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Origin": "http://evil.example"}, "cross-origin request refused"},
		{"null origin", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Origin": "null"}, "cross-origin request refused"},
		{"other port", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Origin": "http://127.0.0.1:1"}, "cross-origin request refused"},
		{"foreign referer", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Referer": "http://evil.example/page"}, "cross-origin request refused"},
		{"rebound host", map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Host": "evil.example", "Origin": "http://evil.example"}, "not served"},
	} {
		code, _, body := do(t, "POST", srv.URL+"/api/pause", strings.NewReader(form), c.hdr)
		if code != 403 && code != 421 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 403 with %q", c.name, code, body, c.want)
		}
	}
	if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
		t.Fatalf("a refused request paused: %v", ps)
	}
	// Same origin by Referer alone, or by Sec-Fetch-Site alone, with the
	// key: accepted; a script with the bearer token and no browser header:
	// accepted.
	code, _, body := do(t, "POST", srv.URL+"/api/pause", strings.NewReader(form), map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Referer": srv.URL + "/"})
	if code != 200 {
		t.Fatalf("same-origin referer: %d %s", code, body)
	}
	code, _, body = do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=translate"), map[string]string{"Cookie": b.cookie, "Content-Type": ct, csrfHeader: b.key, "Sec-Fetch-Site": "same-origin"})
	if code != 200 {
		t.Fatalf("Sec-Fetch-Site same-origin: %d %s", code, body)
	}
	code, _, body = do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=translate"), map[string]string{"Authorization": "Bearer " + h.token, "Content-Type": ct})
	if code != 200 {
		t.Fatalf("script: %d %s", code, body)
	}
	// A GET with a foreign Host is refused too (DNS rebinding reads).
	if code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Host": "evil.example:80"}); code != 421 {
		t.Fatalf("foreign host GET: %d", code)
	}
	if code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Host": "localhost"}); code != 200 {
		t.Fatalf("localhost GET: %d", code)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	const token = "0123456789abcdef-secret"
	opts := e.options()
	opts.Token = token
	srv, _ := server(t, opts)

	for _, p := range []string{"/", "/api/summary", "/metrics", "/api/output?gate=translate"} {
		code, hd, body := do(t, "GET", srv.URL+p, nil, nil)
		if code != 401 || !strings.Contains(body, "auth token") || hd.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without the token: %d %s", p, code, body)
		}
		if code, _, _ := do(t, "GET", srv.URL+p, nil, map[string]string{"Authorization": "Bearer wrong-wrong-wrong-wrong"}); code != 401 {
			t.Errorf("GET %s with a wrong token: %d", p, code)
		}
		if code, _, _ := do(t, "GET", srv.URL+p, nil, map[string]string{"Authorization": "Bearer " + token}); code != 200 {
			t.Errorf("GET %s with the token: %d", p, code)
		}
	}
	for _, p := range []string{"/healthz", "/assets/app.js"} {
		if code, _, _ := do(t, "GET", srv.URL+p, nil, nil); code != 200 {
			t.Errorf("public %s: %d", p, code)
		}
	}
	// A token on a non-loopback Host is fine: the token protects.
	if code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Authorization": "Bearer " + token, "Host": "pi.lan:8371"}); code != 200 {
		t.Errorf("token on a LAN host name: %d", code)
	}

	// /?token= opens a session and redirects; a wrong one does not.
	if code, hd, _ := do(t, "GET", srv.URL+"/?token=nope", nil, nil); code != 401 || hd.Get("Set-Cookie") != "" {
		t.Errorf("wrong ?token: %d %v", code, hd)
	}
	code, hd, _ := do(t, "GET", srv.URL+"/?token="+token, nil, nil)
	ck := hd.Get("Set-Cookie")
	if code != 303 || !strings.HasPrefix(hd.Get("Location"), "/#session=") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") ||
		!strings.HasPrefix(ck, sessionCookie+"=") || strings.Contains(ck, token) {
		t.Fatalf("login: %d %v", code, hd)
	}
	b := login(t, srv.URL, token)
	// The cookie alone gets the page (a shell), not the data.
	if code, _, _ := do(t, "GET", srv.URL+"/", nil, map[string]string{"Cookie": b.cookie}); code != 200 {
		t.Fatalf("the page with the cookie: %d", code)
	}
	for _, p := range []string{"/api/summary", "/metrics", "/api/output?gate=translate"} {
		if code, _, body := do(t, "GET", srv.URL+p, nil, map[string]string{"Cookie": b.cookie}); code != 403 || !strings.Contains(body, csrfHeader) {
			t.Errorf("GET %s with the cookie alone: %d %s, want 403", p, code, body)
		}
		if code, _, body := do(t, "GET", srv.URL+p, nil, map[string]string{"Cookie": b.cookie, csrfHeader: b.key}); code != 200 {
			t.Errorf("GET %s with the cookie and the key: %d %s", p, code, body)
		}
	}
	// Already logged in, /?token= still redirects (the token must leave
	// the address bar) and replaces the session; a wrong one is still a
	// 401.
	code, hd, _ = do(t, "GET", srv.URL+"/?token="+token, nil, map[string]string{"Cookie": b.cookie})
	if code != 303 || !strings.HasPrefix(hd.Get("Location"), "/#session=") {
		t.Errorf("second login: %d %v", code, hd)
	}
	if code, _, _ := do(t, "GET", srv.URL+"/api/summary", nil, map[string]string{"Cookie": b.cookie, csrfHeader: b.key}); code != 401 {
		t.Errorf("the session a second login replaced: %d, want 401", code)
	}
	b = login(t, srv.URL, token)
	if code, hd, _ := do(t, "GET", srv.URL+"/?token=nope", nil, map[string]string{"Cookie": b.cookie}); code != 401 || hd.Get("Set-Cookie") != "" {
		t.Errorf("wrong ?token with a good cookie: %d %v", code, hd)
	}
	// A cookie-authenticated POST needs the key and same-origin proof; a
	// bearer one does not (a browser never adds that header by itself).
	form := strings.NewReader("gate=translate")
	if code, _, body := do(t, "POST", srv.URL+"/api/pause", form, map[string]string{"Cookie": b.cookie, "Content-Type": "application/x-www-form-urlencoded", "Origin": srv.URL}); code != 403 {
		t.Fatalf("cookie POST without the key: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", srv.URL+"/api/pause", strings.NewReader("gate=translate"), b.page(srv.URL, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})); code != 200 {
		t.Fatalf("cookie POST with the key: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=translate"), map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/x-www-form-urlencoded"}); code != 200 {
		t.Fatalf("bearer POST: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", srv.URL+"/api/resume", strings.NewReader("gate=translate"), map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}); code != 403 {
		t.Fatalf("bearer POST from another origin: %d %s", code, body)
	}
}

func TestOptions(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		listen, token string
		want          string
	}{
		{"0.0.0.0:8371", "", "not loopback"},
		{":8371", "", "not loopback"},
		{"[::]:8371", "", "not loopback"},
		{"pi.lan:8371", "", "not loopback"},
		{"192.168.1.5:8371", "", "not loopback"},
		{"127.0.0.1:0", "short", "at least 16"},
	} {
		o := e.options()
		o.Listen, o.Token = c.listen, c.token
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %q) = %v, want %q", c.listen, c.token, err, c.want)
		}
		if c.token == "" && !errors.Is(err, ErrTokenRequired) {
			t.Errorf("New(%q): %v is not ErrTokenRequired", c.listen, err)
		}
		if err := Serve(context.Background(), o, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Serve(%q, %q) = %v", c.listen, c.token, err)
		}
	}
	for _, l := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.2:0"} {
		o := e.options()
		o.Listen = l
		if _, err := New(o); err != nil {
			t.Errorf("New(%q): %v", l, err)
		}
	}
	o := e.options()
	o.Listen, o.Token = "0.0.0.0:0", "0123456789abcdef"
	if _, err := New(o); err != nil {
		t.Errorf("non-loopback with a token: %v", err)
	}
	if _, err := New(Options{Load: e.load}); err == nil {
		t.Error("New without Pause and Resume")
	}
}

func TestServe(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	o := e.options()
	o.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	loginc := make(chan string, 1)
	go func() {
		done <- Serve(ctx, o, func(a, login string) {
			loginc <- login
			addrc <- a
		})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not report its address")
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("reported %s, not the real port", addr)
	}
	if code, _, body := do(t, "GET", "http://"+addr+"/healthz", nil, nil); code != 200 {
		t.Fatalf("healthz: %d %s", code, body)
	}
	// No token: the login URL carries the action token, which sets the
	// cookie that lets POSTs through.
	login := <-loginc
	tok, ok := strings.CutPrefix(login, "http://"+addr+"/?token=")
	if !ok || len(tok) < MinTokenLen {
		t.Fatalf("login URL %q", login)
	}
	code, hd, _ := do(t, "GET", login, nil, nil)
	if code != 303 || !strings.HasPrefix(hd.Get("Location"), "/#session=") || !strings.HasPrefix(hd.Get("Set-Cookie"), sessionCookie+"=") || strings.Contains(hd.Get("Set-Cookie"), tok) {
		t.Fatalf("GET the login URL: %d %v", code, hd)
	}
	if code, _, body := do(t, "POST", "http://"+addr+"/api/pause", strings.NewReader("gate=translate"),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Bearer " + tok}); code != 200 {
		t.Fatalf("POST with the action token: %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

// TestConcurrentClicks: many clients pause and resume different gates at
// once; every pause that was not resumed is there, none is lost.
func TestConcurrentClicks(t *testing.T) {
	e := newEnv(t)
	srv, h := server(t, e.options())
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan string, 3*n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("worker-%02d", i)
			if code, body := post(t, srv.URL, "/api/pause", h, url.Values{"gate": {name}, "reason": {"r" + name}}); code != 200 {
				errs <- fmt.Sprintf("pause %s: %d %s", name, code, body)
				return
			}
			if i%2 == 0 {
				if code, body := post(t, srv.URL, "/api/resume", h, url.Values{"gate": {name}}); code != 200 {
					errs <- fmt.Sprintf("resume %s: %d %s", name, code, body)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	ps, err := gate.NewPauseFile(e.dir).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("worker-%02d", i)
		p, ok := ps[name]
		if ok != (i%2 == 1) || ok && p.Reason != "r"+name {
			t.Errorf("gate %s: paused %v (%+v)", name, ok, p)
		}
	}
	s := getSummary(t, srv.URL, nil)
	paused := 0
	for _, g := range s.Gates {
		if g.State == gate.StatePaused {
			paused++
		}
	}
	if paused != n/2 {
		t.Errorf("%d gates paused in the summary, want %d", paused, n/2)
	}
}

// TestPanic: a panic in a hook is a 500, not a dead server.
func TestPanic(t *testing.T) {
	e := newEnv(t)
	o := e.options()
	o.Load = func() (*gate.Config, error) { panic("boom") }
	srv, _ := server(t, o)
	code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil)
	if code != 500 || !strings.Contains(body, "internal error") {
		t.Fatalf("panic: %d %s", code, body)
	}
	if code, _, _ := do(t, "GET", srv.URL+"/healthz", nil, nil); code != 200 {
		t.Fatalf("after the panic: %d", code)
	}
}

func TestLoadError(t *testing.T) {
	e := newEnv(t)
	o := e.options()
	o.Load = func() (*gate.Config, error) {
		return nil, errors.New("config /etc/cron-gate/config.toml line 3: unknown key gates.x.pausd")
	}
	srv, h := server(t, o)
	code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil)
	if code != 500 || !strings.Contains(body, "unknown key gates.x.pausd") {
		t.Fatalf("summary with a bad config: %d %s", code, body)
	}
	if code, body := post(t, srv.URL, "/api/pause", h, url.Values{"gate": {"x"}}); code != 500 || !strings.Contains(body, "pausd") {
		t.Fatalf("pause with a bad config: %d %s", code, body)
	}
}

func TestDurationWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30 minutes", time.Minute: "minute", 4 * time.Hour: "4 hours", 24 * time.Hour: "day",
		90 * time.Minute: "1h30m", 45 * time.Second: "45 seconds", 48 * time.Hour: "2 days",
	} {
		if got := durationWords(d); got != want {
			t.Errorf("durationWords(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseAction: the request parser never panics, and what it accepts
// is a valid gate name, a bounded one-line reason and a bounded pause.
func FuzzParseAction(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", "gate=translate&reason=quota&duration=2h")
	f.Add("application/json", `{"gate":"a","until":"2027-01-01T00:00:00Z"}`)
	f.Add("application/json; charset=utf-8", `{"gate":"a","duration":"3d"}`)
	f.Add("text/plain", "x")
	f.Add("application/x-www-form-urlencoded", "gate=%zz")
	now := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ctype, body string) {
		a, err := ParseAction(ctype, []byte(body), now)
		if err != nil {
			var br *badRequest
			if !errors.As(err, &br) || br.code < 400 || br.code > 499 || br.msg == "" {
				t.Fatalf("error %v is not a 4xx", err)
			}
			return
		}
		if gate.CheckName(a.Gate) != nil || len(a.Reason) > MaxReasonLen || safetext.Check(a.Reason) != nil ||
			a.Duration < 0 || a.Duration > MaxPauseFor || (!a.Until.IsZero() && !a.Until.After(now)) {
			t.Fatalf("accepted %+v", a)
		}
	})
}

// TestOutputTail: /api/output of a huge output log (a sparse 128 MiB
// section) answers the section's last 64 KiB, says how much is cut, and
// reads no more than that into memory.
func TestOutputTail(t *testing.T) {
	e := newEnv(t)
	e.declare(&gate.GateConfig{Name: "big", LogOutput: true})
	p := filepath.Join(e.dir, "gates", "big", "output.log")
	os.MkdirAll(filepath.Dir(p), 0o755)
	head := "=== cron-gate run r1 started 2026-11-29T09:10:00Z\n"
	end := "\nValueError: quota\n=== cron-gate run r1 ended 2026-11-29T09:10:06Z: failure, exit 3\n"
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(head)
	if _, err := f.WriteAt([]byte(end), 128<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	size := int64(128<<20 + len(end))
	o := e.options()
	o.TimeZone = time.UTC
	srv, _ := server(t, o)
	do(t, "GET", srv.URL+"/api/summary", nil, nil) // load the config first

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, _, body := do(t, "GET", srv.URL+"/api/output?gate=big", nil, nil)
	runtime.ReadMemStats(&after)
	if code != 200 {
		t.Fatalf("output: %d %s", code, safetext.Cut(body, 200))
	}
	// The JSON escapes the zero bytes (\u0000: 6 bytes each) and the
	// client reads it: a few times the 64 KiB, nothing like 128 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("GET /api/output of a %d MiB log allocated %d MiB", size>>20, alloc>>20)
	}
	var out struct {
		Output string `json:"output"`
		Cut    int64  `json:"cut_bytes"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	// The marker's time is shown in the page's zone (3 bytes longer).
	shown := strings.Replace(end, "2026-11-29T09:10:06Z", "2026-11-29 09:10:06 UTC", 1)
	if len(out.Output) != maxOutput+len(shown)-len(end) || !strings.HasSuffix(out.Output, shown) || out.Cut != size-maxOutput {
		t.Errorf("output: %d bytes, cut %d (log %d), ends %q", len(out.Output), out.Cut, size, out.Output[max(0, len(out.Output)-40):])
	}
}

// TestConfigCache: the config is loaded once per ConfigTTL however many
// requests come, a config that fails to load too (it is not re-read at
// every request), and an action loads it afresh.
func TestConfigCache(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	loads, failing := 0, true
	o := e.options()
	o.Load = func() (*gate.Config, error) {
		mu.Lock()
		loads++
		bad := failing
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // let concurrent requests pile up
		if bad {
			return nil, errors.New("config /etc/cron-gate/config.toml line 3: unknown key gates.x.pausd")
		}
		return e.load()
	}
	nLoads := func() int { mu.Lock(); defer mu.Unlock(); return loads }
	srv, h := server(t, o)
	h.cfgTTL = time.Hour // no expiry during the test, however slow
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil); code != 500 || !strings.Contains(body, "pausd") {
				t.Errorf("summary with a bad config: %d %s", code, body)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 5; i++ {
		do(t, "GET", srv.URL+"/metrics", nil, nil)
	}
	if n := nLoads(); n != 1 {
		t.Errorf("a config that fails to load was loaded %d times by 15 requests within its TTL, want 1", n)
	}
	// Fixed in the file: an action does not trust the cache.
	mu.Lock()
	failing = false
	mu.Unlock()
	if code, body := post(t, srv.URL, "/api/pause", h, url.Values{"gate": {"x"}}); code != 200 {
		t.Fatalf("pause after the config was fixed: %d %s", code, body)
	}
	before := nLoads()
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil); code != 200 {
				t.Errorf("summary: %d %s", code, body)
			}
		}()
	}
	wg.Wait()
	if n := nLoads() - before; n > 1 {
		t.Errorf("10 concurrent requests loaded the config %d times, want at most 1", n)
	}
}

// TestNotFound: unknown paths, and paths the mux would redirect to a
// cleaned form, are a 404 in the one-line error format: JSON under
// /api/, text elsewhere; with the security headers.
func TestNotFound(t *testing.T) {
	e := newEnv(t)
	srv, _ := server(t, e.options())
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/nope", "cron-gate serve: no such page: /nope\n"},
		{"GET", "/assets/../x", "cron-gate serve: no such page: /assets/../x\n"},
		{"GET", "/assets/../assets/app.js", "cron-gate serve: no such page: /assets/../assets/app.js\n"},
		{"GET", "//healthz", "cron-gate serve: no such page: //healthz\n"},
		{"GET", "/assets/", "cron-gate serve: no such page: /assets/\n"},
		{"POST", "/index.html", "cron-gate serve: no such page: /index.html\n"},
		{"GET", "/api/nope", `{"error":"no such page: /api/nope"}` + "\n"},
		{"GET", "/api/summary/", `{"error":"no such page: /api/summary/"}` + "\n"},
		{"GET", "/api/./summary", `{"error":"no such page: /api/./summary"}` + "\n"},
	} {
		code, hd, body := do(t, c.method, srv.URL+c.path, nil, nil)
		if code != 404 || body != c.want || hd.Get("Location") != "" || hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d %q %v, want 404 %q", c.method, c.path, code, body, hd, c.want)
		}
	}
}

// TestActionToken: without a configured token (loopback), reads are open
// but a state change needs the per-process action token — so another
// user of the machine, who can GET the page, cannot pause, resume or
// force-resume — as a bearer token, or through the session the login
// URL opens (its cookie, and its key).
func TestActionToken(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	srv, h := server(t, e.options())
	if len(h.token) < MinTokenLen || strings.ContainsAny(h.token, "+/=%&?#") {
		t.Fatalf("generated action token %q", h.token)
	}
	if _, h2 := server(t, e.options()); h2.token == h.token {
		t.Fatal("two handlers made the same action token")
	}

	// Reads need nothing.
	for _, p := range []string{"/", "/api/summary", "/metrics", "/api/output?gate=translate"} {
		if code, _, body := do(t, "GET", srv.URL+p, nil, nil); code != 200 {
			t.Errorf("GET %s without a token: %d %s", p, code, safetext.Cut(body, 200))
		}
	}
	// The page says this browser cannot act, and how to.
	_, _, page := do(t, "GET", srv.URL+"/", nil, nil)
	if !strings.Contains(page, `<meta name="can-act" content="0">`) || !strings.Contains(page, `<p id="readonly" class="notice">`) {
		t.Errorf("page without the cookie: %s", page)
	}
	b := h.browser(t, srv.URL)
	_, _, page = do(t, "GET", srv.URL+"/", nil, map[string]string{"Cookie": b.cookie})
	if !strings.Contains(page, `<meta name="can-act" content="1">`) || !strings.Contains(page, `<p id="readonly" class="notice" hidden>`) {
		t.Errorf("page with the cookie: %s", page)
	}
	if strings.Contains(page, b.key) || strings.Contains(page, h.token) {
		t.Errorf("the page holds the session's key or the token: %s", page)
	}

	// Another local user: a same-origin request, but no action token (or
	// a wrong one, or the cookie older versions set, which held the token
	// itself): 401, nothing done.
	ct := "application/x-www-form-urlencoded"
	for _, path := range []string{"/api/pause", "/api/resume", "/api/force-resume"} {
		for _, hdr := range []map[string]string{
			{"Content-Type": ct, csrfHeader: "x", "Origin": srv.URL, "Sec-Fetch-Site": "same-origin"},
			{"Content-Type": ct, csrfHeader: "x", "Origin": srv.URL, "Cookie": sessionCookie + "=" + b.key},
			{"Content-Type": ct, csrfHeader: "x", "Origin": srv.URL, "Cookie": sessionCookie + "="},
			{"Content-Type": ct, csrfHeader: b.key, "Origin": srv.URL, "Cookie": legacyCookie + "=" + h.token},
			{"Content-Type": ct, "Authorization": "Bearer "},
			{"Content-Type": ct, "Authorization": "Basic " + h.token},
		} {
			code, hd, body := do(t, "POST", srv.URL+path, strings.NewReader("gate=dependency-classifier"), hdr)
			var msg struct{ Error string }
			json.Unmarshal([]byte(body), &msg)
			if code != 401 || hd.Get("WWW-Authenticate") == "" || !strings.Contains(msg.Error, "/?token=") {
				t.Errorf("POST %s %v: %d %s, want 401 naming the login URL", path, hdr, code, body)
			}
		}
	}
	if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
		t.Fatalf("a POST without the action token paused: %v", ps)
	}
	if !mustLoad(t, e).Gate("dependency-classifier").Paused {
		t.Fatal("a POST without the action token force-resumed")
	}

	// With it: the session (cookie and key), or the bearer header.
	if code, body := post(t, srv.URL, "/api/pause", h, url.Values{"gate": {"translate"}}); code != 200 {
		t.Fatalf("pause with the session: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", srv.URL+"/api/pause", strings.NewReader("gate=translate"), map[string]string{"Content-Type": ct, "Cookie": b.cookie, "Origin": srv.URL}); code != 403 {
		t.Fatalf("cookie POST without the key: %d %s", code, body)
	}
	if code, _, body := do(t, "POST", srv.URL+"/api/force-resume", strings.NewReader("gate=dependency-classifier"), map[string]string{"Content-Type": ct, "Authorization": "Bearer " + h.token}); code != 200 {
		t.Fatalf("force-resume with the bearer token: %d %s", code, body)
	}
	if mustLoad(t, e).Gate("dependency-classifier").Paused {
		t.Fatal("force-resume with the action token did nothing")
	}

	// The login URL: a wrong token is a 401 and no cookie; the right one
	// opens a session and redirects every time, so that the token never
	// stays in the address bar, even when the browser was logged in; it
	// deletes the cookie older versions set (which held the token).
	if code, hd, body := do(t, "GET", srv.URL+"/?token=nope", nil, map[string]string{"Cookie": b.cookie}); code != 401 || hd.Get("Set-Cookie") != "" || !strings.Contains(body, "printed") {
		t.Errorf("wrong ?token: %d %v %s", code, hd, body)
	}
	for _, hdr := range []map[string]string{nil, {"Cookie": legacyCookie + "=" + h.token}} {
		code, hd, _ := do(t, "GET", srv.URL+"/?token="+h.token, nil, hdr)
		cks := hd.Values("Set-Cookie")
		if code != 303 || !strings.HasPrefix(hd.Get("Location"), "/#session=") || len(cks) != 2 ||
			!strings.HasPrefix(cks[0], sessionCookie+"=") || strings.Contains(cks[0], "Secure") ||
			!strings.HasPrefix(cks[1], legacyCookie+"=;") || !strings.Contains(cks[1], "Max-Age=0") {
			t.Errorf("login (%v): %d %v", hdr, code, hd)
		}
	}

	// An ActionToken given in the options is the one; a short one is refused.
	o := e.options()
	o.ActionToken = "0123456789abcdef-action"
	srv2, _ := server(t, o)
	if code, _, body := do(t, "POST", srv2.URL+"/api/resume", strings.NewReader("gate=translate"), map[string]string{"Content-Type": ct, "Authorization": "Bearer " + o.ActionToken}); code != 200 {
		t.Errorf("POST with Options.ActionToken: %d %s", code, body)
	}
	o.ActionToken = "short"
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("New with a short action token: %v", err)
	}
}

// TestCookieSecure: the auth cookie is Secure when the browser is not on
// loopback (behind the README's TLS proxy, which keeps Host) or the proxy
// says https; plain on loopback.
func TestCookieSecure(t *testing.T) {
	e := newEnv(t)
	const token = "0123456789abcdef-secret"
	o := e.options()
	o.Token = token
	srv, _ := server(t, o)
	for _, c := range []struct {
		hdr    map[string]string
		secure bool
	}{
		{nil, false},
		{map[string]string{"Host": "localhost:8371"}, false},
		{map[string]string{"Host": "pi.lan"}, true},
		{map[string]string{"Host": "cron.example.org", "X-Forwarded-Proto": "https"}, true},
		{map[string]string{"Host": "127.0.0.1:8371", "X-Forwarded-Proto": "https"}, true},
		{map[string]string{"Host": "127.0.0.1:8371", "X-Forwarded-Proto": "http"}, false},
	} {
		code, hd, _ := do(t, "GET", srv.URL+"/?token="+token, nil, c.hdr)
		ck := hd.Get("Set-Cookie")
		if code != 303 || strings.Contains(ck, "; Secure") != c.secure {
			t.Errorf("login with %v: %d, Set-Cookie %q, want Secure %v", c.hdr, code, ck, c.secure)
		}
	}
}

// A gate with jitter: its next run is cron's next time plus its offset on
// this host (gate.JitterOffset), said in jitter_ms; a gate with once_per
// whose period is done is "done". Fails without the offset added.
func TestSummaryJitterAndDone(t *testing.T) {
	e := newEnv(t)
	e.declare(&gate.GateConfig{Name: "spread", Jitter: 2 * time.Hour})
	e.declare(&gate.GateConfig{Name: "daily", OncePer: gate.OnceWeek})
	e.crontab = "0 3 * * * cron-gate spread -- true\n"
	now := time.Now()
	e.run(t, "daily", now, 0, journal.OutcomeSuccess, 0)
	opts := e.options()
	opts.Host = "host-a"
	opts.CronTimeZone = time.UTC
	opts.Now = func() time.Time { return now }
	srv, _ := server(t, opts)
	s := getSummary(t, srv.URL, nil)
	g := gateOf(t, s, "spread")
	off := gate.JitterOffset("spread", "host-a", 2*time.Hour)
	cronNext := g.Schedules[0].Next
	if g.JitterMS != off.Milliseconds() || !g.NextRun.Equal(cronNext.Add(off)) {
		t.Fatalf("next run %v (jitter_ms %d), want cron's %v + %v", g.NextRun, g.JitterMS, cronNext, off)
	}
	if d := gateOf(t, s, "daily"); d.State != gate.StateDone || !d.PeriodDone || d.OncePer != gate.OnceWeek {
		t.Fatalf("daily: state %s, period done %v", d.State, d.PeriodDone)
	}
}

// "run now": POST /api/trigger calls the Trigger hook with the gate and
// who asked (the dashboard and the client's address), under the same
// session key as pause and resume; without a hook it is 501; a hook that
// cannot start says why (409).
func TestTrigger(t *testing.T) {
	e := newEnv(t)
	fixture(t, e, time.Now())
	var got []string
	opts := e.options()
	opts.Trigger = func(cfg *gate.Config, name, who string) (string, error) {
		if name == "terms" {
			return "", errors.New("no command in the config")
		}
		got = append(got, name+" by "+who)
		return "started a run of gate " + name, nil
	}
	srv, h := server(t, opts)
	code, body := post(t, srv.URL, "/api/trigger", h, url.Values{"gate": {"translate"}})
	if code != 200 || !strings.Contains(body, "started a run of gate translate") {
		t.Fatalf("trigger: %d %s", code, body)
	}
	if len(got) != 1 || !strings.Contains(got[0], "translate by ") || !strings.Contains(got[0], "(dashboard) from 127.0.0.1") {
		t.Fatalf("hook called with %q", got)
	}
	if code, body := post(t, srv.URL, "/api/trigger", h, url.Values{"gate": {"terms"}}); code != 409 || !strings.Contains(body, "run gate terms now: no command") {
		t.Fatalf("failing hook: %d %s", code, body)
	}
	if code, body := post(t, srv.URL, "/api/trigger", h, url.Values{"gate": {"translate"}, "reason": {"x"}}); code != 400 {
		t.Fatalf("trigger with a reason: %d %s", code, body)
	}
	// Without the session's key (the cookie alone): refused, not run.
	b := login(t, srv.URL, h.token)
	code, _, body = do(t, "POST", srv.URL+"/api/trigger", strings.NewReader("gate=translate"),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Cookie": b.cookie, "Origin": srv.URL})
	if code != 403 || len(got) != 1 {
		t.Fatalf("cookie alone: %d %s; hook calls %q", code, body, got)
	}
	opts.Trigger = nil
	srv2, h2 := server(t, opts)
	if code, body := post(t, srv2.URL, "/api/trigger", h2, url.Values{"gate": {"translate"}}); code != 501 {
		t.Fatalf("no hook: %d %s", code, body)
	}
}
