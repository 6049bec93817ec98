package dashboard

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/watch"
)

// The end-to-end test drives Debian's chromium through chromedriver over
// the W3C WebDriver HTTP protocol, with net/http only: no new dependency.

const (
	chromiumPath     = "/usr/bin/chromium"
	chromedriverPath = "/usr/bin/chromedriver"
	elementKey       = "element-6066-11e4-a52e-4f735466cecf" // W3C WebDriver's element reference key
)

// webDriver is one chromedriver process and one browser session.
type webDriver struct {
	t       testing.TB
	base    string // http://127.0.0.1:PORT/session/ID
	cmd     *exec.Cmd
	session string
}

// needBrowser returns the paths, or skips the test when they are missing
// and $CI is unset; under CI a missing browser fails the test.
func needBrowser(t testing.TB) {
	t.Helper()
	for _, p := range []string{chromiumPath, chromedriverPath} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "" {
				t.Skipf("%s is missing (apt-get install -y chromium chromium-driver); skipped outside CI", p)
			}
			t.Fatalf("%s is missing under CI: .ci/run must install chromium and chromium-driver", p)
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startBrowser starts chromedriver and a headless chromium session; both
// are ended when the test ends (the session deleted, then chromedriver's
// whole process group killed, which takes any browser left with it).
func startBrowser(t testing.TB, width, height int) *webDriver {
	t.Helper()
	needBrowser(t)
	port := freePort(t)
	cmd := exec.Command(chromedriverPath, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(t.TempDir(), "chromedriver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wd := &webDriver{t: t, cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	t.Cleanup(func() {
		if wd.session != "" {
			wd.call("DELETE", "", nil, nil)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(wd.base + "/status")
		if err == nil {
			var st struct {
				Value struct{ Ready bool } `json:"value"`
			}
			json.NewDecoder(res.Body).Decode(&st)
			res.Body.Close()
			if st.Value.Ready {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not become ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromiumPath,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
				fmt.Sprintf("--window-size=%d,%d", width, height), "--lang=en-US"},
		},
	}}}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	wd.call("POST", "/session", caps, &sess)
	if sess.SessionID == "" {
		t.Fatal("chromedriver returned no session")
	}
	wd.session = sess.SessionID
	wd.base += "/session/" + sess.SessionID
	return wd
}

// call sends one WebDriver command; path is relative to the session (or
// to the server before there is one). It fails the test on an error.
func (wd *webDriver) call(method, path string, body any, out any) {
	wd.t.Helper()
	if err := wd.try(method, path, body, out); err != nil {
		wd.t.Fatal(err)
	}
}

func (wd *webDriver) try(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, wd.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	cl := &http.Client{Timeout: 60 * time.Second}
	res, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("webdriver %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, res.StatusCode, data)
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, res.StatusCode, short(string(env.Value), 500))
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

func (wd *webDriver) open(url string) { wd.call("POST", "/url", map[string]string{"url": url}, nil) }

// find returns the element matching a CSS selector.
func (wd *webDriver) find(css string) string {
	wd.t.Helper()
	var el map[string]string
	wd.call("POST", "/element", map[string]string{"using": "css selector", "value": css}, &el)
	return el[elementKey]
}

func (wd *webDriver) click(css string) {
	wd.t.Helper()
	wd.call("POST", "/element/"+wd.find(css)+"/click", map[string]any{}, nil)
}

func (wd *webDriver) typeIn(css, text string) {
	wd.t.Helper()
	wd.call("POST", "/element/"+wd.find(css)+"/value", map[string]string{"text": text}, nil)
}

func (wd *webDriver) text(css string) string {
	wd.t.Helper()
	var s string
	wd.call("GET", "/element/"+wd.find(css)+"/text", nil, &s)
	return s
}

// eval runs a script in the page and decodes its result into out.
func (wd *webDriver) eval(script string, out any, args ...any) {
	wd.t.Helper()
	if args == nil {
		args = []any{}
	}
	wd.call("POST", "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (wd *webDriver) rowText(name string) string {
	wd.t.Helper()
	var s string
	wd.eval(`const r = document.querySelector('tr.gate[data-gate="' + arguments[0] + '"]'); return r ? r.innerText : "";`, &s, name)
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
	needBrowser(t)
	e := newEnv(t)
	now := time.Now()
	browserFixture(t, e, now)
	opts := e.options()
	opts.TimeZone = seoul(t)
	srv, _ := server(t, opts)
	wd := startBrowser(t, 1500, 700)

	wd.open(srv.URL + "/")
	waitFor(t, "the six gate rows", 20*time.Second, func() bool {
		var n int
		wd.eval(`return document.querySelectorAll('tr.gate').length;`, &n)
		return n == 6
	})
	var names []string
	wd.eval(`return Array.from(document.querySelectorAll('tr.gate')).map(r => r.dataset.gate);`, &names)
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
		txt := wd.rowText(name)
		for _, w := range want {
			if !strings.Contains(txt, w) {
				t.Errorf("row %s lacks %q:\n%s", name, w, txt)
			}
		}
	}
	if strings.Contains(wd.rowText("dependency-classifier"), "\nresume") {
		t.Errorf("a config pause offers a plain resume")
	}
	// The unreadable schedule is cut with an ellipsis inside its cell,
	// the full text in the tooltip; a long readable one too.
	var cut struct {
		Overflows, Inside bool
		Title, Overflow   string
	}
	wd.eval(`const s = document.querySelector('tr.gate[data-gate="newsletter"] td.col-cadence .cut');
		const td = s.closest('td');
		return {Overflows: s.scrollWidth > s.clientWidth, Inside: s.getBoundingClientRect().right <= td.getBoundingClientRect().right + 0.5,
			Title: s.title, Overflow: getComputedStyle(s).textOverflow};`, &cut)
	if !cut.Inside || cut.Overflow != "ellipsis" || !strings.Contains(cut.Title, "0 9 1-7 * tue#1") {
		t.Errorf("cron cell: %+v", cut)
	}
	// A time's tooltip is its full RFC 3339 timestamp.
	var title string
	wd.eval(`return document.querySelector('tr.gate[data-gate="translate"] td.col-failure span[title]').title;`, &title)
	if _, err := time.Parse(time.RFC3339Nano, title); err != nil || !strings.HasSuffix(title, "+09:00") {
		t.Errorf("time tooltip %q: %v", title, err)
	}

	// The tail of the last output, on demand.
	wd.click(`tr.gate[data-gate="translate"] button.output`)
	waitFor(t, "translate's output", 10*time.Second, func() bool {
		var s string
		wd.eval(`return document.querySelector('tr.output[data-gate="translate"] pre').textContent;`, &s)
		return strings.Contains(s, "ValueError: quota")
	})
	if p := os.Getenv("DASHBOARD_SCREENSHOT"); p != "" {
		var h int
		wd.eval(`return Math.ceil(document.documentElement.scrollHeight);`, &h)
		wd.call("POST", "/window/rect", map[string]int{"width": 1500, "height": h + 100}, nil)
		var b64 string
		wd.call("GET", "/screenshot", nil, &b64)
		png, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s (%d bytes)", p, len(png))
	}
	wd.click(`tr.gate[data-gate="translate"] button.output`)

	// Pause ko-followup: the button opens the form, the reason is typed,
	// the confirm button posts.
	wd.click(`tr.gate[data-gate="ko-followup"] button.pause`)
	wd.typeIn(`tr.form[data-gate="ko-followup"] input[name=reason]`, "rebuilding the index")
	wd.typeIn(`tr.form[data-gate="ko-followup"] input[name=duration]`, "2h")
	wd.click(`tr.form[data-gate="ko-followup"] button.pause-confirm`)
	waitFor(t, "the pause in pauses.json", 10*time.Second, func() bool {
		ps, err := gate.ReadPauses(e.dir)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := ps["ko-followup"]
		return ok && p.Reason == "rebuilding the index" && p.Until.Sub(now) > 119*time.Minute
	})
	waitFor(t, "the row to show the pause", 10*time.Second, func() bool {
		txt := wd.rowText("ko-followup")
		return strings.Contains(txt, "paused") && strings.Contains(txt, "rebuilding the index") && strings.Contains(txt, "until")
	})
	if msg := wd.text("#message"); !strings.Contains(msg, "paused gate ko-followup") {
		t.Errorf("message after pause: %q", msg)
	}
	// The status view agrees.
	rep, err := gate.Status(mustLoad(t, e), time.Now(), "ko-followup")
	if err != nil || rep.Gates[0].State != gate.StatePaused {
		t.Fatalf("status after the click: %+v %v", rep, err)
	}

	// Resume it.
	wd.click(`tr.gate[data-gate="ko-followup"] button.resume`)
	waitFor(t, "the pause to be lifted", 10*time.Second, func() bool {
		ps, _ := gate.ReadPauses(e.dir)
		_, ok := ps["ko-followup"]
		return !ok
	})
	waitFor(t, "the row to show ok", 10*time.Second, func() bool {
		txt := wd.rowText("ko-followup")
		return strings.HasPrefix(strings.TrimSpace(strings.SplitN(txt, "\t", 3)[1]), "ok") || strings.Contains(txt, "\tok")
	})

	// No error reached the console (CSP violations would).
	var errs []any
	if err := wd.try("POST", "/se/log", map[string]string{"type": "browser"}, &errs); err == nil {
		for _, m := range errs {
			if s := fmt.Sprint(m); strings.Contains(s, "SEVERE") {
				t.Errorf("browser console: %s", s)
			}
		}
	}
}
