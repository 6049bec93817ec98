package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/watch"
	"github.com/crongate/crongate/tests/browsertest"
)

// The end-to-end tests drive Debian's headless chromium with chromedp
// (tests/browsertest: the DevTools protocol, no driver binary).

func rowText(wd *browsertest.Browser, name string) string {
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
// dir and on the page, and resumes it. (TestBrowserLayout checks the page
// at a laptop's and a phone's width and takes docs/'s screenshots.)
func TestBrowser(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	now := time.Now()
	browserFixture(t, e, now)
	opts := e.options()
	opts.TimeZone = seoul(t)
	srv, h := server(t, opts)
	wd := browsertest.Start(t, 1500, 700)
	sixRows := func() {
		browsertest.WaitFor(t, "the six gate rows", 20*time.Second, func() bool {
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
	browsertest.WaitFor(t, "the message of the refused click", 10*time.Second, func() bool {
		m := wd.Text("#message")
		return strings.Contains(m, "Not allowed") && strings.Contains(m, "/?token=") && strings.Contains(m, "cron-gate serve printed")
	})
	if ps, _ := gate.NewPauseFile(e.dir).List(context.Background()); len(ps) != 0 {
		t.Fatalf("a POST without the action token paused: %v", ps)
	}
	// The browser logs the 401 as an error; nothing else may be there
	// (reading the log empties it).
	for _, m := range wd.ConsoleErrors() {
		if !strings.Contains(m, "/api/pause") || !strings.Contains(m, "401") {
			t.Errorf("browser console: %s", m)
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
	// Problems first: failing, stale, then paused, running, ok, never-run.
	if strings.Join(names, ",") != "translate,terms,dependency-classifier,blog-worker-health,ko-followup,newsletter" {
		t.Fatalf("rows: %v", names)
	}
	for name, want := range map[string][]string{
		"translate":             {"failing", "failure 3", "every 4 hours from 00:00", "KST", "failed · alert sent"},
		"dependency-classifier": {"paused", "config: provider quota exhausted", "every 30 minutes from :15", "force-resume"},
		"blog-worker-health":    {"running", "pid ", "every 5 minutes"},
		"terms":                 {"stale", "missing: no successful run", "stale · alert pending"},
		"ko-followup":           {"ok", "every 4 hours from 02:00", "pause"},
		"newsletter":            {"never-run", "at 09:00 on days 1-7 of the month and on Tuesday", "no attempts yet"},
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
	// The long schedule stays inside its cell (three lines at most), the
	// full text, with the line as written and its crontab and line, in the
	// tooltip.
	var cut struct {
		Inside bool
		Title  string
		Clamp  string
	}
	wd.Eval(`const s = document.querySelector('tr.gate[data-gate="newsletter"] td.col-name .cadence');
		const td = s.closest('td');
		return {Inside: s.getBoundingClientRect().right <= td.getBoundingClientRect().right + 0.5,
			Title: s.title, Clamp: getComputedStyle(s).webkitLineClamp};`, &cut)
	if !cut.Inside || cut.Clamp != "3" || !strings.Contains(cut.Title, "0 9 1-7 * tue#1  (crontab -l:7)") {
		t.Errorf("cron cell: %+v", cut)
	}
	// A time's tooltip is its full RFC 3339 timestamp.
	var title string
	wd.Eval(`return document.querySelector('tr.gate[data-gate="translate"] td.col-success span[title]').title;`, &title)
	if _, err := time.Parse(time.RFC3339Nano, title); err != nil || !strings.HasSuffix(title, "+09:00") {
		t.Errorf("time tooltip %q: %v", title, err)
	}

	// The tail of the last output, on demand.
	wd.Click(`tr.gate[data-gate="translate"] button.output`)
	browsertest.WaitFor(t, "translate's output", 10*time.Second, func() bool {
		var s string
		wd.Eval(`return document.querySelector('tr.output[data-gate="translate"] pre').textContent;`, &s)
		return strings.Contains(s, "ValueError: quota")
	})
	wd.Click(`tr.gate[data-gate="translate"] button.output`)

	// Pause ko-followup: the button opens the form, the reason is typed,
	// the confirm button posts.
	wd.Click(`tr.gate[data-gate="ko-followup"] button.pause`)
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=reason]`, "rebuilding the index")
	wd.Type(`tr.form[data-gate="ko-followup"] input[name=duration]`, "2h")
	wd.Click(`tr.form[data-gate="ko-followup"] button.pause-confirm`)
	browsertest.WaitFor(t, "the pause in pauses.json", 10*time.Second, func() bool {
		ps, err := gate.NewPauseFile(e.dir).List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p, ok := ps["ko-followup"]
		return ok && p.Reason == "rebuilding the index" && p.Until.Sub(now) > 119*time.Minute
	})
	browsertest.WaitFor(t, "the row to show the pause", 10*time.Second, func() bool {
		txt := rowText(wd, "ko-followup")
		return strings.Contains(txt, "paused") && strings.Contains(txt, "rebuilding the index") && strings.Contains(txt, "until")
	})
	if msg := wd.Text("#message"); !strings.Contains(msg, "paused gate ko-followup") {
		t.Errorf("message after pause: %q", msg)
	}
	// The status view agrees.
	rep, err := gate.Status(mustLoad(t, e), gate.Pauses{}, time.Now(), "ko-followup")
	if err != nil || rep.Gates[0].State != gate.StatePaused {
		t.Fatalf("status after the click: %+v %v", rep, err)
	}

	// Resume it.
	wd.Click(`tr.gate[data-gate="ko-followup"] button.resume`)
	browsertest.WaitFor(t, "the pause to be lifted", 10*time.Second, func() bool {
		ps, _ := gate.NewPauseFile(e.dir).List(context.Background())
		_, ok := ps["ko-followup"]
		return !ok
	})
	browsertest.WaitFor(t, "the row to show ok", 10*time.Second, func() bool {
		txt := rowText(wd, "ko-followup")
		return strings.HasPrefix(strings.TrimSpace(strings.SplitN(txt, "\t", 3)[1]), "ok") || strings.Contains(txt, "\tok")
	})

	// No error reached the console (CSP violations would).
	for _, m := range wd.ConsoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// unsafeJS finds, in the page, every text node and attribute that holds a
// character internal/safetext never shows raw (C0, DEL, C1, U+2028/9, the
// bidi controls, U+FEFF): there must be none, inside an isolating element
// or not. It returns them, and the text of the <bdi> elements.
const unsafeJS = `const re = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/;
	const bad = [];
	const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
	for (let n = walk.currentNode; n; n = walk.nextNode()) {
		if (n.nodeType === Node.TEXT_NODE) {
			if (re.test(n.data)) bad.push('text in <' + n.parentNode.nodeName + '>: ' + JSON.stringify(n.data));
		} else {
			for (const a of n.attributes) if (re.test(a.value)) bad.push('attribute ' + a.name + ' of <' + n.nodeName + '>: ' + JSON.stringify(a.value));
		}
	}
	return {Bad: bad, Isolated: Array.from(document.querySelectorAll('bdi')).map(b => b.textContent)};`

// TestBrowserHostileText: a pause reason, a journal's detail, the
// watchdog's detail and a run's output holding escapes, a newline and
// right-to-left overrides (written by hand, or stored before reasons were
// checked) are shown escaped, each in an isolating <bdi>, and nowhere in
// the page is such a character left raw (issue 12, item 7). The API keeps
// the stored values, with the bytes escaped.
func TestBrowserHostileText(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	now := time.Now()
	const reason = "L1\nL2\x1b]0;pwned\x07\x1b[31mred \u202e5202 ,1 naJ"
	e.declare(&gate.GateConfig{Name: "y", Interval: time.Hour})
	e.declare(&gate.GateConfig{Name: "j", Interval: time.Hour, LogOutput: true})
	if err := gate.NewPauseFile(e.dir).Set(context.Background(), "y", gate.Pause{Reason: reason, Since: now, Until: now.Add(time.Hour), Who: "ops@h\u2066x"}); err != nil {
		t.Fatal(err)
	}
	e.journal(t, "j",
		journal.Record{Run: "r1", Event: journal.EventStart, Time: now.Add(-time.Minute)},
		journal.Record{Run: "r1", Event: journal.EventEnd, Time: now.Add(-50 * time.Second), Outcome: journal.OutcomeFailure, Exit: code(3),
			Started: now.Add(-time.Minute), DurationMS: 10000, Detail: "boom\n\x1b[2J\u202efake"})
	e.output(t, "j", "plain line\n\x1b[31mred\x1b[0m \u202ereversed\u202c\r\n\u2067tail\n")
	writeFile(t, filepath.Join(e.dir, watch.StateFile), fmt.Sprintf(`{"v":1,"updated":%q,"checks":3,"gates":{"j":{"conditions":{"failed":{"bad":true,"count":3,"since":%q,"last_bad":%q,"detail":"x\u001b[31my\u202ez","alerted":["c"]}}}}}`,
		now.UTC().Format(time.RFC3339), now.Add(-time.Hour).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	srv, h := server(t, e.options())

	// The API: the stored values, the bytes escaped.
	code, _, body := do(t, "GET", srv.URL+"/api/summary", nil, nil)
	if code != 200 || strings.ContainsAny(body, "\x1b\u202e\u2066\u2067") || !strings.Contains(body, `\u202e5202`) || !strings.Contains(body, `\u001b[31m`) {
		t.Fatalf("/api/summary: %d %s", code, body)
	}
	if g := gateOf(t, getSummary(t, srv.URL, nil), "y"); g.Pause == nil || g.Pause.Reason != reason {
		t.Errorf("the summary's reason %+v, want the stored one", g.Pause)
	}

	wd := browsertest.Start(t, 1500, 700)
	wd.Open(srv.URL + "/?token=" + h.token)
	browsertest.WaitFor(t, "the two rows", 20*time.Second, func() bool {
		var n int
		wd.Eval(`return document.querySelectorAll('tr.gate').length;`, &n)
		return n == 2
	})
	wd.Click(`tr.gate[data-gate="j"] button.output`)
	browsertest.WaitFor(t, "j's output", 10*time.Second, func() bool {
		var s string
		wd.Eval(`return document.querySelector('tr.output[data-gate="j"] pre').textContent;`, &s)
		return strings.Contains(s, "tail")
	})
	var page struct {
		Bad      []string
		Isolated []string
	}
	wd.Eval(unsafeJS, &page)
	for _, b := range page.Bad {
		t.Errorf("raw unsafe character in the page: %s", b)
	}
	iso := strings.Join(page.Isolated, "\n---\n")
	for _, want := range []string{
		`L1\nL2\x1b]0;pwned\a\x1b[31mred \u202e5202 ,1 naJ`, // the reason
		`failure 3`, // the outcome
		"plain line\nred \\u202ereversed\\u202c\n\\u2067tail\n", // the output: lines kept, CRLF as LF, colours removed
	} {
		if !strings.Contains(iso, want) {
			t.Errorf("no <bdi> holds %q; the isolated texts:\n%s", want, iso)
		}
	}
	var titles string
	wd.Eval(`return Array.from(document.querySelectorAll('[title]')).map(e => e.title).join('\n');`, &titles)
	for _, want := range []string{`by ops@h\u2066x`, `boom\n\x1b[2J\u202efake`, `x\x1b[31my\u202ez`} {
		if !strings.Contains(titles, want) {
			t.Errorf("no tooltip holds %q:\n%s", want, titles)
		}
	}
	for _, m := range wd.ConsoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// TestBrowserSession: the login keeps the session's key in the page's
// localStorage and the cookie out of reach of scripts (HttpOnly); the
// address bar loses both the token and the key; "log out" ends the
// session on the server, and the page is read-only again (issue 12,
// item 9).
func TestBrowserSession(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	fixture(t, e, time.Now())
	srv, h := server(t, e.options())
	wd := browsertest.Start(t, 1500, 700)
	wd.Open(srv.URL + "/?token=" + h.token)
	browsertest.WaitFor(t, "the page", 20*time.Second, func() bool {
		var n int
		wd.Eval(`return document.querySelectorAll('tr.gate').length;`, &n)
		return n == 6
	})
	var st struct {
		Href, Cookie, Key string
		Logout, ReadOnly  bool
	}
	// Log out reloads the page, and a script run while the new document
	// is being parsed finds no #logout yet (WebDriver waited for the
	// load; chromedp runs the script at once): that reads as not yet.
	read := func() {
		wd.Eval(`const out = document.getElementById('logout'), ro = document.getElementById('readonly');
			return {Href: location.href, Cookie: document.cookie, Key: localStorage.getItem('cron-gate-session-key') || '',
			Logout: !out || !out.hidden, ReadOnly: !!ro && !ro.hidden};`, &st)
	}
	read()
	if st.Href != srv.URL+"/" || st.Cookie != "" || len(st.Key) < 40 || !st.Logout || st.ReadOnly || h.sessions.count() != 1 {
		t.Fatalf("after login: %+v, %d sessions", st, h.sessions.count())
	}
	wd.Click(`#logout`)
	browsertest.WaitFor(t, "the page read-only after log out", 10*time.Second, func() bool {
		read()
		return st.ReadOnly && !st.Logout && st.Key == ""
	})
	if n := h.sessions.count(); n != 0 {
		t.Errorf("%d sessions after log out", n)
	}
	for _, m := range wd.ConsoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// A run waiting out its jitter shows on the page (issue 32 item 5): the
// row's badge says waiting, and its line when the command starts. The
// waiting run is this test's own process, alive for the whole test.
// Fails if the page renders the gate as never-run, or without the start.
func TestBrowserWaiting(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	now := time.Now()
	e.declare(&gate.GateConfig{Name: "w", Interval: time.Hour, Jitter: time.Hour})
	pid := os.Getpid()
	e.journal(t, "w", journal.Record{Run: "20261204T000000.000000Z-" + strconv.Itoa(pid), Event: journal.EventWait,
		Time: now.Add(-time.Minute), Until: now.Add(3 * time.Minute), Pid: pid, PidStart: runner.StartTicks(pid)})
	srv, _ := server(t, e.options())
	wd := browsertest.Start(t, 1280, 700)
	wd.Open(srv.URL + "/")
	var row struct{ State, Text string }
	browsertest.WaitFor(t, "w's row says waiting", 20*time.Second, func() bool {
		wd.Eval(`const r = document.querySelector('tr.gate[data-gate="w"]');
			if (!r) return {State: '', Text: ''};
			const b = r.querySelector('.state');
			return {State: b ? b.dataset.state : '', Text: r.textContent};`, &row)
		return row.State == gate.StateWaiting
	})
	if !strings.Contains(row.Text, "jitter · starts") {
		t.Fatalf("w's row says waiting without when it starts: %q", row.Text)
	}
}
