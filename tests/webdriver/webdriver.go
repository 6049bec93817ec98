// Package webdriver drives Debian's headless chromium through chromedriver
// over the W3C WebDriver HTTP protocol, with net/http only (no new
// dependency), for the tests that check the dashboard in a real browser
// (dashboard's TestBrowser, tests' TestServe). Every method takes the
// test's testing.TB and fails the test on an error; Start registers a
// cleanup that ends the session and kills chromedriver and every browser
// process it started.
//
// The rule for a missing browser: Need skips the test when chromium or
// chromedriver is missing and $CI is unset, and fails it under CI, where
// .ci/run must have installed them (apt-get install chromium
// chromium-driver).
package webdriver

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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/safetext"
)

// The Debian packages' paths.
const (
	ChromiumPath     = "/usr/bin/chromium"
	ChromedriverPath = "/usr/bin/chromedriver"
)

// elementKey is W3C WebDriver's element reference key.
const elementKey = "element-6066-11e4-a52e-4f735466cecf"

// pollInterval is how often WaitFor looks again.
const pollInterval = 50 * time.Millisecond

// Need returns when chromium and chromedriver are installed. When one is
// missing it skips the test if $CI is unset, and fails it under CI.
func Need(t testing.TB) {
	t.Helper()
	for _, p := range []string{ChromiumPath, ChromedriverPath} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "" {
				t.Skipf("%s is missing (apt-get install -y chromium chromium-driver); skipped outside CI", p)
			}
			t.Fatalf("%s is missing under CI: .ci/run must install chromium and chromium-driver", p)
		}
	}
}

// Driver is one chromedriver process and one browser session.
type Driver struct {
	t       testing.TB
	server  string // http://127.0.0.1:PORT
	base    string // server + /session/ID once there is a session
	session string
	profile string // the session's fresh --user-data-dir
}

// Start starts chromedriver and a headless chromium session with a
// window of width×height, a fresh profile and the flags --headless
// --no-sandbox --disable-gpu --no-first-run --disable-background-networking
// --disable-component-update --disable-sync (and --disable-dev-shm-usage,
// --lang=en-US). Both are ended when the test ends: the session is
// deleted, chromedriver's process group is killed, then any process still
// running with this session's profile directory on its command line (the
// directory is the test's own, so nothing else can match).
// Start calls Need first. extra flags are added to chromium's (such as
// --host-resolver-rules, to reach a loopback server by another name).
func Start(t testing.TB, width, height int, extra ...string) *Driver {
	t.Helper()
	Need(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command(ChromedriverPath, fmt.Sprintf("--port=%d", port), "--allowed-ips=127.0.0.1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(tmp, "chromedriver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	server := fmt.Sprintf("http://127.0.0.1:%d", port)
	d := &Driver{t: t, server: server, base: server, profile: filepath.Join(tmp, "profile")}
	t.Cleanup(func() {
		if d.session != "" {
			d.Try("DELETE", "", nil, nil)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		killProfile(d.profile)
		logf.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logf.Name()); err == nil && len(data) > 0 {
				t.Logf("chromedriver's log (last 2000 bytes):\n%s", tail(data, 2000))
			}
		}
	})
	WaitFor(t, "chromedriver to be ready", 20*time.Second, func() bool {
		res, err := http.Get(server + "/status")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var st struct {
			Value struct{ Ready bool } `json:"value"`
		}
		json.NewDecoder(res.Body).Decode(&st)
		return st.Value.Ready
	})
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": ChromiumPath,
			"args": append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--user-data-dir=" + d.profile,
				fmt.Sprintf("--window-size=%d,%d", width, height), "--lang=en-US"}, extra...),
		},
	}}}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	d.Call("POST", "/session", caps, &sess)
	if sess.SessionID == "" {
		t.Fatal("chromedriver returned no session")
	}
	d.session = sess.SessionID
	d.base = server + "/session/" + sess.SessionID
	return d
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// killProfile kills every process whose command line names profile, the
// session's own temporary directory (chromium's --user-data-dir, its crash
// handler's database under it): a browser process that left chromedriver's
// process group (the crash handler starts a session of its own) would
// otherwise outlive the test.
func killProfile(profile string) {
	arg := []byte(profile)
	self := os.Getpid()
	for round := 0; round < 3; round++ {
		killed := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || !bytes.Contains(cmdline, arg) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			return
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Call sends one WebDriver command; path is relative to the session (to
// the server before there is one). body is sent as JSON, the answer's
// "value" decoded into out (when not nil). It fails the test on an error.
func (d *Driver) Call(method, path string, body any, out any) {
	d.t.Helper()
	if err := d.Try(method, path, body, out); err != nil {
		d.t.Fatal(err)
	}
}

// Try is Call returning the error instead of failing the test.
func (d *Driver) Try(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		return err
	}
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
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, res.StatusCode, tail(data, 500))
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, res.StatusCode, safetext.Cut(string(env.Value), 500))
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

// Open navigates to url and returns when the page has loaded.
func (d *Driver) Open(url string) {
	d.t.Helper()
	d.Call("POST", "/url", map[string]string{"url": url}, nil)
}

// Find returns the reference of the first element matching a CSS
// selector; no match fails the test.
func (d *Driver) Find(css string) string {
	d.t.Helper()
	var el map[string]string
	d.Call("POST", "/element", map[string]string{"using": "css selector", "value": css}, &el)
	if el[elementKey] == "" {
		d.t.Fatalf("webdriver: no element reference for %q", css)
	}
	return el[elementKey]
}

// Click clicks the element matching css. A page that re-renders itself
// (the dashboard rebuilds its buttons at every refresh) can replace the
// element between finding and clicking it: then it is found again, a few
// times at most.
func (d *Driver) Click(css string) {
	d.t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		err = d.Try("POST", "/element/"+d.Find(css)+"/click", map[string]any{}, nil)
		if err == nil || !strings.Contains(err.Error(), "stale element reference") {
			break
		}
	}
	if err != nil {
		d.t.Fatal(err)
	}
}

// Type types text into the element matching css, as keystrokes.
func (d *Driver) Type(css, text string) {
	d.t.Helper()
	d.Call("POST", "/element/"+d.Find(css)+"/value", map[string]string{"text": text}, nil)
}

// Keys for Press: the W3C WebDriver codes of special keys.
const (
	KeyEnter  = "\uE007"
	KeyEscape = "\uE00C"
	KeyTab    = "\uE004"
)

// Press presses and releases each key of keys in turn on the keyboard,
// as a person would, into whatever element has the focus (W3C actions):
// unlike Type, it does not focus an element first.
func (d *Driver) Press(keys string) {
	d.t.Helper()
	var acts []map[string]string
	for _, r := range keys {
		acts = append(acts, map[string]string{"type": "keyDown", "value": string(r)}, map[string]string{"type": "keyUp", "value": string(r)})
	}
	d.Call("POST", "/actions", map[string]any{"actions": []map[string]any{{"type": "key", "id": "keyboard", "actions": acts}}}, nil)
	d.Try("DELETE", "/actions", nil, nil)
}

// Text returns the rendered text of the element matching css.
func (d *Driver) Text(css string) string {
	d.t.Helper()
	var s string
	d.Call("GET", "/element/"+d.Find(css)+"/text", nil, &s)
	return s
}

// Eval runs script (a function body; its arguments are arguments[0...])
// in the page and decodes what it returns into out (when not nil).
func (d *Driver) Eval(script string, out any, args ...any) {
	d.t.Helper()
	if args == nil {
		args = []any{}
	}
	d.Call("POST", "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

// SetWindowSize resizes the browser window.
func (d *Driver) SetWindowSize(width, height int) {
	d.t.Helper()
	d.Call("POST", "/window/rect", map[string]int{"width": width, "height": height}, nil)
}

// Viewport makes the page's viewport width×height CSS pixels, as a
// phone's (Chrome DevTools' device metrics, through chromedriver): a
// desktop window cannot be made narrower than about 500 pixels.
func (d *Driver) Viewport(width, height int) {
	d.t.Helper()
	d.Call("POST", "/goog/cdp/execute", map[string]any{"cmd": "Emulation.setDeviceMetricsOverride",
		"params": map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true}}, nil)
}

// Screenshot returns a PNG of the window.
func (d *Driver) Screenshot() []byte {
	d.t.Helper()
	var b64 string
	d.Call("GET", "/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		d.t.Fatalf("webdriver: the screenshot is not a PNG: %v", err)
	}
	return png
}

// AlertText returns the text of the open dialog (alert, confirm, prompt),
// and false when none is open.
func (d *Driver) AlertText() (string, bool) {
	var s string
	if err := d.Try("GET", "/alert/text", nil, &s); err != nil {
		return "", false
	}
	return s, true
}

// AcceptAlert presses OK in the open dialog.
func (d *Driver) AcceptAlert() {
	d.t.Helper()
	d.Call("POST", "/alert/accept", map[string]any{}, nil)
}

// DismissAlert presses Cancel in the open dialog.
func (d *Driver) DismissAlert() {
	d.t.Helper()
	d.Call("POST", "/alert/dismiss", map[string]any{}, nil)
}

// ConsoleErrors returns the browser console's SEVERE entries so far (a
// content security policy violation is one), or an error when the
// driver does not offer the log.
func (d *Driver) ConsoleErrors() ([]string, error) {
	var entries []struct {
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	if err := d.Try("POST", "/se/log", map[string]string{"type": "browser"}, &entries); err != nil {
		return nil, err
	}
	var errs []string
	for _, e := range entries {
		if e.Level == "SEVERE" {
			errs = append(errs, e.Message)
		}
	}
	return errs, nil
}

// WaitFor polls cond until it holds, and fails the test when d has passed
// first.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pollInterval)
	}
}
