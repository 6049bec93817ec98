// Package browsertest starts Debian's headless chromium for the tests that
// check the dashboard in a real browser (dashboard's TestBrowser*, tests'
// TestServe), and drives it with github.com/chromedp/chromedp over the
// DevTools protocol: no driver binary, no Node, no download. It is a thin
// layer over chromedp that fails the test on an error: every method takes
// the test's testing.TB, and Start registers a cleanup that closes the
// browser and checks that none of its processes outlives the test.
//
// The browser tests are in the full tier only (testbin.Full): Need skips
// them in `go test ./...`. The rule for a missing browser: Need skips the
// test when chromium is missing and $CI is unset, and fails it under CI,
// where .ci/run must have installed it (apt-get install chromium).
//
// chromedp is a test-only dependency: no binary under cmd/ links it
// (tests' TestTestOnlyDepsNotLinked).
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/crongate/crongate/tests/testbin"
)

// ChromiumPath is the Debian package's browser.
const ChromiumPath = "/usr/bin/chromium"

// Keys for Press (chromedp's kb).
const (
	KeyEnter  = kb.Enter
	KeyEscape = kb.Escape
	KeyTab    = kb.Tab
)

const (
	// actionTimeout bounds one action (a click waits for its element to
	// be visible, a navigation for the load event): a failure, never a
	// measurement.
	actionTimeout = 30 * time.Second
	// pollInterval is how often WaitFor looks again.
	pollInterval = 50 * time.Millisecond
	// exitDeadline bounds the wait for the browser's processes to be gone
	// once the browser is closed.
	exitDeadline = 10 * time.Second
)

// Need returns when chromium is installed. When it is missing it skips
// the test if $CI is unset, and fails it under CI.
func Need(t testing.TB) {
	t.Helper()
	testbin.Full(t, "drives headless Chromium")
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s is missing (apt-get install -y chromium); skipped outside CI", ChromiumPath)
		}
		t.Fatalf("%s is missing under CI: .ci/run must install chromium", ChromiumPath)
	}
}

// Browser is one headless chromium process and its one tab.
type Browser struct {
	t       testing.TB
	ctx     context.Context // the tab's chromedp context
	profile string          // the fresh --user-data-dir

	mu           sync.Mutex
	errs         []string                 // console errors not yet read
	syncs        map[string]chan struct{} // console marks awaited by ConsoleErrors
	nsync        int
	dialog       string        // the open dialog's message
	dialogOpen   bool          // a dialog is open
	dialogOpened chan struct{} // gets a value when a dialog opens
}

// Start starts a headless chromium with a window of width×height, a
// fresh profile (a directory of the test's) and the flags --headless
// --no-sandbox --disable-gpu --no-first-run --disable-background-networking
// --disable-component-update --disable-sync (and --disable-dev-shm-usage,
// --lang=en-US), and opens a blank tab. extra flags ("--name=value" or
// "--name") are added to chromium's (such as --host-resolver-rules, to
// reach a loopback server by another name). Start calls Need first.
//
// When the test ends the browser is closed, and every process whose
// command line names the profile directory (chromium passes it to its
// children, its crash handler keeps its database under it) must be gone
// within a deadline: one still there is killed and fails the test.
func Start(t testing.TB, width, height int, extra ...string) *Browser {
	// Long: the browser's start and the cleanup registered at each step, which must stay in order.
	t.Helper()
	Need(t)
	tmp := t.TempDir()
	b := &Browser{t: t, profile: filepath.Join(tmp, "profile"), dialogOpened: make(chan struct{}, 1)}
	logf, err := os.Create(filepath.Join(tmp, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true), // not chromedp.Headless: it hides the scroll bars the layout test measures
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(b.profile),
		chromedp.WindowSize(width, height),
		chromedp.CombinedOutput(logf),
	}
	for _, f := range extra {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b.ctx = ctx
	t.Cleanup(func() {
		// Close the browser gracefully (chromedp.Cancel), then end the
		// allocator, which waits for the browser process.
		cctx, cancel := context.WithTimeout(ctx, exitDeadline)
		if err := chromedp.Cancel(cctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing chromium: %v", err)
		}
		cancel()
		cancelTab()
		cancelAlloc()
		if left := b.leftovers(); len(left) > 0 {
			t.Errorf("chromium processes outlived the browser by %v (killed now): %s", exitDeadline, strings.Join(left, "; "))
		}
		logf.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logf.Name()); err == nil && len(data) > 0 {
				t.Logf("chromium's output (last 2000 bytes):\n%s", tail(data, 2000))
			}
		}
	})
	// The first action starts the browser and opens the tab; the browser
	// lives as long as the context of that action, so it is the tab's own,
	// bounded here by a timer. Then subscribe to the console and the
	// dialogs, before anything is loaded.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	timer := time.NewTimer(actionTimeout)
	defer timer.Stop()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting %s: %v", ChromiumPath, err)
		}
	case <-timer.C:
		cancelTab()
		t.Fatalf("%s did not start within %v: %v", ChromiumPath, actionTimeout, <-started)
	}
	console := chromedp.Console(ctx)
	opened := chromedp.Events(ctx, page.JavascriptDialogOpening)
	closed := chromedp.Events(ctx, page.JavascriptDialogClosed)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleDebug && strings.HasPrefix(m.Text, syncMark) {
				b.mu.Lock()
				if ch := b.syncs[m.Text]; ch != nil {
					close(ch)
					delete(b.syncs, m.Text)
				}
				b.mu.Unlock()
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				msg := m.Text
				if m.URL != "" {
					msg = m.URL + " " + msg
				}
				b.mu.Lock()
				b.errs = append(b.errs, msg)
				b.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev, err := range opened {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialog, b.dialogOpen = ev.Message, true
			b.mu.Unlock()
			select {
			case b.dialogOpened <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		for _, err := range closed {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialog, b.dialogOpen = "", false
			b.mu.Unlock()
		}
	}()
	return b
}

// leftovers waits up to exitDeadline for every process whose command line
// names the profile directory to be gone; it kills those still there and
// returns their pids and command lines.
func (b *Browser) leftovers() []string {
	deadline := time.Now().Add(exitDeadline)
	for {
		procs := processesNaming(b.profile)
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var left []string
			for pid, cmdline := range procs {
				syscall.Kill(pid, syscall.SIGKILL)
				left = append(left, fmt.Sprintf("%d %s", pid, tail([]byte(cmdline), 200)))
			}
			return left
		}
		time.Sleep(pollInterval)
	}
}

// processesNaming returns the live processes (not zombies) whose command
// line contains s, but this one.
func processesNaming(s string) map[int]string {
	found := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		found[pid] = string(bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '}))
	}
	return found
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// do runs actions on the tab within actionTimeout.
func (b *Browser) do(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Open navigates to url and returns when the page has loaded.
func (b *Browser) Open(url string) {
	b.t.Helper()
	if err := b.do(chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("chromium: open %s: %v", url, err)
	}
}

// Click clicks the element matching css, once it is visible, as a mouse
// would (at its centre, scrolled into view). A page that re-renders itself
// (the dashboard rebuilds its buttons at every refresh) can replace the
// element between finding and clicking it: then it is found again, a few
// times at most. A click that opens a dialog (confirm) returns with the
// dialog open: see AlertText.
func (b *Browser) Click(css string) {
	b.t.Helper()
	var err error
	for try := 0; try < 5; try++ {
		if err = b.click(css); err == nil || errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	if err != nil {
		b.t.Fatalf("chromium: click %s: %v", css, err)
	}
}

// click is one try of Click. A dialog blocks the page and so the mouse
// event that opened it: the click then returns without waiting for the
// action, which ends when the dialog is closed.
func (b *Browser) click(css string) error {
	select {
	case <-b.dialogOpened: // an old signal
	default:
	}
	done := make(chan error, 1)
	go func() { done <- b.do(chromedp.Click(chromedp.CSS(css))) }()
	select {
	case err := <-done:
		return err
	case <-b.dialogOpened:
		return nil
	}
}

// Type types text into the element matching css, as keystrokes, once it
// is visible.
func (b *Browser) Type(css, text string) {
	b.t.Helper()
	if err := b.do(chromedp.SendKeys(chromedp.CSS(css), text)); err != nil {
		b.t.Fatalf("chromium: type into %s: %v", css, err)
	}
}

// Press presses and releases each key of keys in turn on the keyboard, as
// a person would, into whatever element has the focus: unlike Type, it
// does not focus an element first.
func (b *Browser) Press(keys string) {
	b.t.Helper()
	if err := b.do(chromedp.KeyEvent(keys)); err != nil {
		b.t.Fatalf("chromium: press %q: %v", keys, err)
	}
}

// Text returns the rendered text of the element matching css ("" when it
// is not visible), once it is in the page.
func (b *Browser) Text(css string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css), chromedp.NodeReady))
	if err != nil {
		b.t.Fatalf("chromium: text of %s: %v", css, err)
	}
	return s
}

// Eval runs script, the body of a function whose arguments are args
// (arguments[0...], passed as JSON), in the page, and decodes the JSON of
// what it returns into out (when not nil). An exception fails the test.
func (b *Browser) Eval(script string, out any, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	argv, err := json.Marshal(args)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	var raw []byte
	for {
		raw, err = chromedp.Run(ctx, chromedp.Evaluate[[]byte]("(function() {"+script+"\n}).apply(null, "+string(argv)+")"))
		// A script sent while the page navigates (a reload, a link
		// followed) dies with its document; WebDriver waited for the
		// new one to load, and so does this: the script runs again in
		// the new document until the action's deadline.
		if err == nil || !navigated(err) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		b.t.Fatalf("chromium: script %q: %v", tail([]byte(script), 300), err)
	}
	if out == nil {
		return
	}
	if len(raw) == 0 {
		raw = []byte("null")
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("chromium: script %q returned %s: %v", tail([]byte(script), 300), tail(raw, 300), err)
	}
}

// navigated reports whether err is Chromium's answer to a script whose
// document went away while it ran.
func navigated(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Inspected target navigated or closed") ||
		strings.Contains(m, "Execution context was destroyed") ||
		strings.Contains(m, "Cannot find context with specified id")
}

// SetWindowSize resizes the browser window.
func (b *Browser) SetWindowSize(width, height int) {
	b.t.Helper()
	err := b.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		w, err := cdp.Call(ctx, t, browser.GetWindowForTarget, browser.GetWindowForTargetParams{})
		if err != nil {
			return err
		}
		_, err = chromedp.CallBrowser(ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{
			WindowID: w.WindowID, Bounds: &browser.Bounds{Width: int64(width), Height: int64(height)}})
		return err
	}))
	if err != nil {
		b.t.Fatalf("chromium: resize the window to %dx%d: %v", width, height, err)
	}
}

// Viewport makes the page's viewport width×height CSS pixels, as a
// phone's (DevTools' device metrics, mobile): a desktop window cannot be
// made narrower than about 500 pixels.
func (b *Browser) Viewport(width, height int) {
	b.t.Helper()
	if err := b.do(chromedp.EmulateViewport(int64(width), int64(height), chromedp.EmulateMobile)); err != nil {
		b.t.Fatalf("chromium: viewport %dx%d: %v", width, height, err)
	}
}

// Screenshot returns a PNG of the viewport.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("chromium: the screenshot is not a PNG (%d bytes): %v", len(png), err)
	}
	return png
}

// AlertText returns the message of the open dialog (alert, confirm,
// prompt), and false when none is open.
func (b *Browser) AlertText() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dialog, b.dialogOpen
}

// AcceptAlert presses OK in the open dialog.
func (b *Browser) AcceptAlert() {
	b.t.Helper()
	b.closeDialog(true)
}

// DismissAlert presses Cancel in the open dialog.
func (b *Browser) DismissAlert() {
	b.t.Helper()
	b.closeDialog(false)
}

func (b *Browser) closeDialog(accept bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept}); err != nil {
		b.t.Fatalf("chromium: close the dialog (accept %v): %v", accept, err)
	}
}

// syncMark starts the console message ConsoleErrors writes to know that
// every message before it has been read.
const syncMark = "browsertest: console read up to here "

// ConsoleErrors returns the console's errors and uncaught exceptions since
// the last call (a content security policy violation is one, a failed
// request another), each as its URL and text, and forgets them. The
// messages come as events, read by a goroutine: it first writes a mark to
// the console and waits for the mark to be read, so that nothing the page
// logged before the call is missed.
func (b *Browser) ConsoleErrors() []string {
	b.t.Helper()
	b.mu.Lock()
	b.nsync++
	mark := syncMark + strconv.Itoa(b.nsync)
	seen := make(chan struct{})
	if b.syncs == nil {
		b.syncs = map[string]chan struct{}{}
	}
	b.syncs[mark] = seen
	b.mu.Unlock()
	b.Eval(`console.debug(arguments[0]); return null;`, nil, mark)
	select {
	case <-seen:
	case <-time.After(actionTimeout):
		b.t.Fatalf("chromium: the console mark %q was not read within %v", mark, actionTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.errs
	b.errs = nil
	return errs
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
