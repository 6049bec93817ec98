package dashboard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/webdriver"
	"github.com/crongate/crongate/watch"
)

// The end-to-end test drives Debian's chromium through chromedriver
// (internal/webdriver: the W3C WebDriver protocol over net/http only).

func rowText(wd *webdriver.Driver, name string) string {
	var s string
	wd.Eval(`const r = document.querySelector('tr.gate[data-gate="' + arguments[0] + '"]'); return r ? r.innerText : "";`, &s, name)
	return s
}

// browserFixture is the fixture plus a watchdog state with conditions.
func browserFixture(t testing.TB, e *env, now time.Time) {
	fixture(t, e, now)
	st := fmt.Sprintf(`{"v":1,"updated":%q,"checks":288,"gates":{
 "translate":{"conditions":{"failed":{"bad":true,"count":3,"since":%q,"last_bad":%q,"detail":"the last run ended: failure, exit 3","alerted":["command-1a2b3c4d"]}}},
 "terms":{"first_seen":%q,"conditions":{"stale":{"bad":true,"count":1,"since":%q,"last_bad":%q,"detail":"missing: no successful run since the watchdog began watching it"}}}}}`,
		now.Add(-time.Minute).UTC().Format(time.RFC3339), now.Add(-65*time.Minute).UTC().Format(time.RFC3339), now.Add(-time.Minute).UTC().Format(time.RFC3339),
		now.Add(-3*time.Hour).UTC().Format(time.RFC3339), now.Add(-time.Minute).UTC().Format(time.RFC3339), now.Add(-time.Minute).UTC().Format(time.RFC3339))
	writeFile(t, filepath.Join(e.dir, watch.StateFile), st)
}

// TestBrowser loads the page in headless chromium, checks the rows,
// pauses a gate with the button and the form, sees the pause in the state
// dir and on the page, and resumes it. With DASHBOARD_SCREENSHOT=FILE it
// saves a PNG of the page (docs/dashboard.png comes from it).
func TestBrowser(t *testing.T) {
	webdriver.Need(t)
	e := newEnv(t)
	now := time.Now()
	browserFixture(t, e, now)
	opts := e.options()
	opts.TimeZone = seoul(t)
	srv, h := server(t, opts)
	wd := webdriver.Start(t, 1500, 700)
	sixRows := func() {
		webdriver.WaitFor(t, "the six gate rows", 20*time.Second, func() bool {
			var n int
			wd.Eval(`return document.querySelectorAll('tr.gate').length;`, &n)
			return n == 6
		})
	}

	// Not logged in (no token is configured: loopback): the page reads,
	// says how to get the buttons, and shows them disabled.
	wd.Open(srv.URL + "/")
	sixRows()
	var ro struct {
		Notice        string
		Hidden        bool
		Disabled      []bool
		Title         string
		OutputEnabled bool
	}
	wd.Eval(`const n = document.getElementById('readonly');
		const bs = Array.from(document.querySelectorAll('tr.gate button.pause, tr.gate button.resume, tr.gate button.force-resume'));
		return {Notice: n.textContent, Hidden: n.hidden, Disabled: bs.map(b => b.disabled),
			Title: document.querySelector('tr.gate[data-gate="ko-followup"] button.pause').title,
			OutputEnabled: !document.querySelector('tr.gate[data-gate="translate"] button.output').disabled};`, &ro)
	if ro.Hidden || !strings.Contains(ro.Notice, "/?token=") || !strings.Contains(ro.Notice, "cron-gate serve printed") || !strings.Contains(ro.Title, "/?token=") || !ro.OutputEnabled {
		t.Errorf("read-only page: %+v", ro)
	}
	if len(ro.Disabled) < 7 || strings.Contains(fmt.Sprint(ro.Disabled), "false") {
		t.Errorf("state-changing buttons before login: disabled %v", ro.Disabled)
	}
	// A click that gets through anyway (a cookie lost, a restarted
	// server) is refused, and the page says what to do.
	wd.Eval(`const b = document.querySelector('tr.gate[data-gate="ko-followup"] button.pause'); b.disabled = false; b.click(); return null;`, nil)
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=reason]`, "forged")
	wd.Click(`tr.form[data-gate="ko-followup"] button.pause-confirm`)
	webdriver.WaitFor(t, "the message of the refused click", 10*time.Second, func() bool {
		m := wd.Text("#message")
		return strings.Contains(m, "Not allowed") && strings.Contains(m, "/?token=") && strings.Contains(m, "cron-gate serve printed")
	})
	if ps, _ := gate.ReadPauses(e.dir); len(ps) != 0 {
		t.Fatalf("a POST without the action token paused: %v", ps)
	}
	// The browser logs the 401 as an error; nothing else may be there
	// (reading the log empties it).
	if errs, err := wd.ConsoleErrors(); err == nil {
		for _, m := range errs {
			if !strings.Contains(m, "/api/pause") || !strings.Contains(m, "401") {
				t.Errorf("browser console: %s", m)
			}
		}
	}

	// Log in: the address with the action token sets the cookie and
	// leaves the address bar at /.
	wd.Open(srv.URL + "/?token=" + h.token)
	sixRows()
	var href string
	wd.Eval(`return location.href;`, &href)
	var hidden bool
	wd.Eval(`return document.getElementById('readonly').hidden && !document.querySelector('tr.gate[data-gate="ko-followup"] button.pause').disabled;`, &hidden)
	if href != srv.URL+"/" || !hidden {
		t.Errorf("after login: at %s, buttons enabled and notice hidden: %v", href, hidden)
	}
	var names []string
	wd.Eval(`return Array.from(document.querySelectorAll('tr.gate')).map(r => r.dataset.gate);`, &names)
	if strings.Join(names, ",") != "blog-worker-health,dependency-classifier,ko-followup,newsletter,terms,translate" {
		t.Fatalf("rows: %v", names)
	}
	for name, want := range map[string][]string{
		"translate":             {"failing", "failure 3", "every 4 hours from 00:00", "KST", "failed: alerted"},
		"dependency-classifier": {"paused", "config: provider quota exhausted", "every 30 minutes from :15", "force-resume"},
		"blog-worker-health":    {"running", "pid ", "every 5 minutes"},
		"terms":                 {"stale", "legacy_lock", "stale: pending"},
		"ko-followup":           {"ok", "every 4 hours from 02:00", "pause"},
		"newsletter":            {"never-run", "0 9 1-7 * tue#1"},
	} {
		txt := rowText(wd, name)
		for _, w := range want {
			if !strings.Contains(txt, w) {
				t.Errorf("row %s lacks %q:\n%s", name, w, txt)
			}
		}
	}
	if strings.Contains(rowText(wd, "dependency-classifier"), "\nresume") {
		t.Errorf("a config pause offers a plain resume")
	}
	// The unreadable schedule is cut with an ellipsis inside its cell,
	// the full text in the tooltip; a long readable one too.
	var cut struct {
		Overflows, Inside bool
		Title, Overflow   string
	}
	wd.Eval(`const s = document.querySelector('tr.gate[data-gate="newsletter"] td.col-cadence .cut');
		const td = s.closest('td');
		return {Overflows: s.scrollWidth > s.clientWidth, Inside: s.getBoundingClientRect().right <= td.getBoundingClientRect().right + 0.5,
			Title: s.title, Overflow: getComputedStyle(s).textOverflow};`, &cut)
	if !cut.Inside || cut.Overflow != "ellipsis" || !strings.Contains(cut.Title, "0 9 1-7 * tue#1") {
		t.Errorf("cron cell: %+v", cut)
	}
	// A time's tooltip is its full RFC 3339 timestamp.
	var title string
	wd.Eval(`return document.querySelector('tr.gate[data-gate="translate"] td.col-failure span[title]').title;`, &title)
	if _, err := time.Parse(time.RFC3339Nano, title); err != nil || !strings.HasSuffix(title, "+09:00") {
		t.Errorf("time tooltip %q: %v", title, err)
	}

	// The tail of the last output, on demand.
	wd.Click(`tr.gate[data-gate="translate"] button.output`)
	webdriver.WaitFor(t, "translate's output", 10*time.Second, func() bool {
		var s string
		wd.Eval(`return document.querySelector('tr.output[data-gate="translate"] pre').textContent;`, &s)
		return strings.Contains(s, "ValueError: quota")
	})
	if p := os.Getenv("DASHBOARD_SCREENSHOT"); p != "" {
		var h int
		wd.Eval(`return Math.ceil(document.documentElement.scrollHeight);`, &h)
		wd.SetWindowSize(1500, h+100)
		png := wd.Screenshot()
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s (%d bytes)", p, len(png))
	}
	wd.Click(`tr.gate[data-gate="translate"] button.output`)

	// Pause ko-followup: the button opens the form, the reason is typed,
	// the confirm button posts.
	wd.Click(`tr.gate[data-gate="ko-followup"] button.pause`)
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=reason]`, "rebuilding the index")
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=duration]`, "2h")
	wd.Click(`tr.form[data-gate="ko-followup"] button.pause-confirm`)
	webdriver.WaitFor(t, "the pause in pauses.json", 10*time.Second, func() bool {
		ps, err := gate.ReadPauses(e.dir)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := ps["ko-followup"]
		return ok && p.Reason == "rebuilding the index" && p.Until.Sub(now) > 119*time.Minute
	})
	webdriver.WaitFor(t, "the row to show the pause", 10*time.Second, func() bool {
		txt := rowText(wd, "ko-followup")
		return strings.Contains(txt, "paused") && strings.Contains(txt, "rebuilding the index") && strings.Contains(txt, "until")
	})
	if msg := wd.Text("#message"); !strings.Contains(msg, "paused gate ko-followup") {
		t.Errorf("message after pause: %q", msg)
	}
	// The status view agrees.
	rep, err := gate.Status(mustLoad(t, e), time.Now(), "ko-followup")
	if err != nil || rep.Gates[0].State != gate.StatePaused {
		t.Fatalf("status after the click: %+v %v", rep, err)
	}

	// Resume it.
	wd.Click(`tr.gate[data-gate="ko-followup"] button.resume`)
	webdriver.WaitFor(t, "the pause to be lifted", 10*time.Second, func() bool {
		ps, _ := gate.ReadPauses(e.dir)
		_, ok := ps["ko-followup"]
		return !ok
	})
	webdriver.WaitFor(t, "the row to show ok", 10*time.Second, func() bool {
		txt := rowText(wd, "ko-followup")
		return strings.HasPrefix(strings.TrimSpace(strings.SplitN(txt, "\t", 3)[1]), "ok") || strings.Contains(txt, "\tok")
	})

	// No error reached the console (CSP violations would).
	if errs, err := wd.ConsoleErrors(); err == nil {
		for _, m := range errs {
			t.Errorf("browser console: %s", m)
		}
	}
}
