package dashboard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/watch"
	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/tests/browsertest"
)

// A 200-character reason, as people write them.
const longReason = "provider quota exhausted until the monthly reset on the first; the classifier would otherwise retry every run and burn the remaining budget of the KO/EN pair links — ask ops before resuming this gate."

// history appends n runs of gate ending before now, one per step, each
// lasting a little longer than the one before; failEvery > 0 makes every
// failEvery-th fail with exit 3.
func (e *env) history(t testing.TB, name string, now time.Time, n int, step time.Duration, failEvery int) {
	t.Helper()
	for i := 0; i < n; i++ {
		start := now.Add(-time.Duration(n-i) * step)
		outcome, code := journal.OutcomeSuccess, 0
		if failEvery > 0 && (i+1)%failEvery == 0 {
			outcome, code = journal.OutcomeFailure, 3
		}
		e.run(t, name, start, time.Duration(4+i%5)*time.Second+time.Duration(i)*100*time.Millisecond, outcome, code)
	}
}

// layoutFixture declares ten gates, one or more in every category the
// page sorts by, with realistic names (40 characters for some) and a 200
// character reason; blog-autopush is blocked by a legacy lock this process
// holds. It returns the names in the order the page must show them.
func layoutFixture(t *testing.T, e *env, now time.Time) []string {
	min := time.Minute
	lock := filepath.Join(e.dir, "blog-autopush.lock")
	holdLegacyLock(t, lock)
	e.declare(&gate.GateConfig{Name: "translate", Interval: 4 * time.Hour, LogOutput: true})
	e.declare(&gate.GateConfig{Name: "blog-autopush", Interval: 30 * min, LegacyLocks: []string{lock}})
	e.declare(&gate.GateConfig{Name: "terms", Interval: 30 * min})
	e.declare(&gate.GateConfig{Name: "classifier-codex-provider-slot-rebalance", Interval: time.Hour, MaxRuntime: time.Hour})
	e.declare(&gate.GateConfig{Name: "dependency-classifier", Interval: 30 * min, Paused: true, Reason: longReason})
	e.declare(&gate.GateConfig{Name: "ko-en-link-attribute-classifier-pairs-v2", Interval: time.Hour})
	e.declare(&gate.GateConfig{Name: "blog-worker-health", Interval: 5 * min})
	e.declare(&gate.GateConfig{Name: "ko-followup", Interval: 4 * time.Hour})
	e.declare(&gate.GateConfig{Name: "sitemap", Interval: time.Hour})
	e.declare(&gate.GateConfig{Name: "newsletter-first-tuesday-of-the-month-ko"})

	e.history(t, "translate", now.Add(-70*min), 18, 4*time.Hour, 7)
	e.run(t, "translate", now.Add(-70*min), 9*time.Second, journal.OutcomeFailure, 3)
	e.output(t, "translate", "translating 3 posts\n\x1b[1mTraceback\x1b[0m (most recent call last):\n\x1b[31mValueError: quota\x1b[0m\n")
	e.history(t, "blog-autopush", now.Add(-2*time.Hour), 16, 30*min, 0)
	for i := 4; i >= 1; i-- {
		e.journal(t, "blog-autopush", journal.Record{Run: fmt.Sprintf("s%d", i), Event: journal.EventSkip, Time: now.Add(-time.Duration(i) * 30 * min),
			Outcome: journal.OutcomeSkipped, Reason: journal.ReasonLegacyLock, Detail: "legacy lock " + lock + " is held"})
	}
	e.history(t, "terms", now.Add(-3*time.Hour), 12, 30*min, 0)
	e.history(t, "classifier-codex-provider-slot-rebalance", now.Add(-3*time.Hour), 20, time.Hour, 0)
	e.running(t, "classifier-codex-provider-slot-rebalance", now.Add(-3*time.Hour))
	e.history(t, "dependency-classifier", now.Add(-5*time.Hour), 20, 30*min, 9)
	e.history(t, "ko-en-link-attribute-classifier-pairs-v2", now.Add(-time.Hour), 10, time.Hour, 0)
	e.pauseFor(t, "ko-en-link-attribute-classifier-pairs-v2", longReason, now, 6*time.Hour)
	e.history(t, "blog-worker-health", now.Add(-4*min), 20, 5*min, 0)
	e.running(t, "blog-worker-health", now.Add(-90*time.Second))
	e.history(t, "ko-followup", now.Add(-2*time.Hour), 20, 4*time.Hour, 0)
	e.history(t, "sitemap", now.Add(-20*min), 20, time.Hour, 11)
	e.crontab = strings.Join([]string{
		"# the blog's workers",
		"0 */4 * * * cron-gate translate -- python3 translate_worker.py",
		"*/30 * * * * cron-gate blog-autopush -- /srv/blog/scripts/autopush.sh",
		"0,30 8-23 * * mon-fri,sun cron-gate terms -- python3 terms.py",
		"5 * * * * cron-gate classifier-codex-provider-slot-rebalance -- withlock --slots 4 -- python3 rebalance.py",
		"15,45 * * * * cron-gate dependency-classifier -- withlock --slots 6 -- python3 dependency_classifier.py",
		"40 * * * * cron-gate ko-en-link-attribute-classifier-pairs-v2 -- python3 classify_links.py",
		"*/5 * * * * cron-gate blog-worker-health -- python3 worker_health.py",
		"0 2-22/4 * * * cron-gate ko-followup -- python3 translate_worker.py --followup",
		"20 * * * * cron-gate sitemap -- python3 sitemap.py",
		"0 9 1-7 * tue#1 cron-gate newsletter-first-tuesday-of-the-month-ko -- ./send-newsletter --only-the-first-tuesday-of-the-month",
		"",
	}, "\n")
	ts := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }
	writeFile(t, filepath.Join(e.dir, watch.StateFile), fmt.Sprintf(`{"v":1,"updated":%q,"checks":288,"gates":{
 "translate":{"conditions":{"failed":{"bad":true,"count":3,"since":%q,"last_bad":%q,"detail":"the last run ended: failure, exit 3","alerted":["command-1a2b3c4d"]}}},
 "blog-autopush":{"conditions":{"skipping":{"bad":true,"count":1,"since":%q,"last_bad":%q,"detail":"blocked for 2h: skipped 4 times in a row (legacy_lock)"}}},
 "terms":{"first_seen":%q,"conditions":{"stale":{"bad":true,"count":4,"since":%q,"last_bad":%q,"detail":"no successful run for 3h","alerted":["command-1a2b3c4d"]}}},
 "sitemap":{"conditions":{"unscheduled":{"bad":true,"count":9,"since":%q,"last_bad":%q,"detail":"no cron-gate sitemap line","muted":true,"known_at_install":true}}}}}`,
		ts(-time.Minute), ts(-65*time.Minute), ts(-time.Minute), ts(-5*time.Minute), ts(-time.Minute),
		ts(-48*time.Hour), ts(-20*time.Minute), ts(-time.Minute), ts(-9*time.Hour), ts(-time.Minute)))
	return []string{"translate", "blog-autopush", "terms", "classifier-codex-provider-slot-rebalance",
		"dependency-classifier", "ko-en-link-attribute-classifier-pairs-v2", "blog-worker-health", "ko-followup", "sitemap",
		"newsletter-first-tuesday-of-the-month-ko"}
}

// holdLegacyLock holds an exclusive flock on lock until the test ends:
// from an old worker, "python3 old_autopush.py", when python3 is here (so
// that the page and the screenshots show what an operator would see),
// else from this process.
func holdLegacyLock(t *testing.T, lock string) {
	t.Helper()
	py, err := exec.LookPath("/usr/bin/python3") // the system's: not a shim that re-execs itself
	if err != nil {
		py, err = exec.LookPath("python3")
	}
	if err == nil {
		dir := t.TempDir()
		ready := filepath.Join(dir, "ready")
		script := "import fcntl, os, time\nf = open(os.environ['LOCK'], 'w')\nfcntl.flock(f, fcntl.LOCK_EX)\nopen(os.environ['READY'], 'w').close()\ntime.sleep(3600)\n"
		if err := os.WriteFile(filepath.Join(dir, "old_autopush.py"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "old_autopush.py")
		cmd.Args[0] = "python3"
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "LOCK="+lock, "READY="+ready)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		browsertest.WaitFor(t, "the old worker to hold its lock", 20*time.Second, func() bool {
			_, err := os.Stat(ready)
			return err == nil
		})
		return
	}
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// openPage opens the dashboard at base, logged in with h's token, in a
// chromium of width×height (a phone's viewport below 500 pixels).
func openPage(t *testing.T, base string, h *handler, width, height int) *browsertest.Browser {
	wd := browsertest.Start(t, width, height)
	if width < 500 {
		wd.Viewport(width, height)
	}
	wd.Open(base + "/?token=" + h.token)
	return wd
}

// layoutJS measures the page: its overflow, every visible button once
// scrolled into view, the rows' order and categories, the summary.
const layoutJS = `const de = document.documentElement;
	const out = {ScrollWidth: de.scrollWidth, ClientWidth: de.clientWidth, Buttons: [], Rows: [], Categories: [], Summary: []};
	for (const b of document.querySelectorAll('button')) {
		if (b.offsetParent === null) continue;
		b.scrollIntoView({block: 'center', inline: 'nearest'});
		const r = b.getBoundingClientRect();
		if (r.left < 0 || r.right > de.clientWidth + 0.5 || r.top < 0 || r.bottom > window.innerHeight + 0.5 || r.width < 1) {
			const row = b.closest('tr');
			out.Buttons.push((row ? row.dataset.gate + ' ' : '') + b.textContent + ' at ' + JSON.stringify([r.left, r.top, r.right, r.bottom]));
		}
	}
	window.scrollTo(0, 0);
	for (const r of document.querySelectorAll('tr.gate')) { if (!r.hidden) { out.Rows.push(r.dataset.gate); out.Categories.push(r.dataset.category); } }
	for (const b of document.querySelectorAll('#summary button')) out.Summary.push(b.textContent + (b.getAttribute('aria-pressed') === 'true' ? '*' : ''));
	return out;`

type layout struct {
	ScrollWidth, ClientWidth int
	Buttons, Rows            []string
	Categories, Summary      []string
}

// TestBrowserLayout (issue 16, items 6 and 7): at 1280×800 (a laptop) and
// 390×844 (a phone) the page does not scroll sideways, with 40-character
// names and 200-character reasons; every button is inside the viewport
// once scrolled to; the rows come problems first (failing, blocked,
// stale, overrun, then paused, running, ok, never-run), and the summary
// counts them and filters the table; the blocked row names who holds its
// lock; a paused gate says paused, not a next run; the output has its
// escape codes removed; the pause form works from the keyboard (Enter
// submits, Escape cancels). With DASHBOARD_SCREENSHOTS=DIR it saves
// DIR/dashboard.png and DIR/dashboard-390.png (docs/ has them).
func TestBrowserLayout(t *testing.T) {
	browsertest.Need(t)
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	e := newEnv(t)
	now := time.Now()
	order := layoutFixture(t, e, now)
	opts := e.options()
	opts.TimeZone = seoul(t)
	srv, h := server(t, opts)
	wantSummary := "10all 1failing 1blocked 1stale 1overrun 2paused 1running 2ok 1never-run"
	for _, size := range []struct {
		w, h int
		shot string
	}{{1280, 800, "dashboard.png"}, {390, 844, "dashboard-390.png"}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			wd := openPage(t, srv.URL, h, size.w, size.h)
			var l layout
			browsertest.WaitFor(t, "the ten rows", 20*time.Second, func() bool {
				wd.Eval(layoutJS, &l)
				return len(l.Rows) == 10
			})
			if l.ClientWidth > size.w || l.ClientWidth < size.w-20 {
				t.Errorf("the viewport is %d pixels wide, want %d (less a scroll bar)", l.ClientWidth, size.w)
			}
			if l.ScrollWidth > l.ClientWidth {
				t.Errorf("the page scrolls sideways: scrollWidth %d > clientWidth %d", l.ScrollWidth, l.ClientWidth)
			}
			for _, b := range l.Buttons {
				t.Errorf("button outside the viewport once scrolled to: %s", b)
			}
			if got := strings.Join(l.Rows, " "); got != strings.Join(order, " ") {
				t.Errorf("rows:\n got %s\nwant %s (categories %v)", got, strings.Join(order, " "), l.Categories)
			}
			if got := strings.Join(l.Summary, " "); got != strings.Replace(wantSummary, "all", "all*", 1) {
				t.Errorf("summary: %s, want %s", got, wantSummary)
			}
			for name, want := range map[string][]string{
				"blog-autopush":                            {"blocked", "legacy_lock", "4 in a row", "pid ", "holds legacy lock ", "will skip unless that changes", "blocked · alert pending"},
				"dependency-classifier":                    {"paused", "config: provider quota exhausted", "would run at", "force-resume"},
				"ko-en-link-attribute-classifier-pairs-v2": {"paused until", "command: provider quota"},
				"classifier-codex-provider-slot-rebalance": {"overrun", "longer than max_runtime 1h"},
				"terms":     {"stale", "stale · alert sent"},
				"translate": {"failing", "failure 3", "failed · alert sent", "last ran 9s"},
				"sitemap":   {"not scheduled · known at install"},
			} {
				txt := rowText(wd, name)
				for _, w := range want {
					if !strings.Contains(txt, w) {
						t.Errorf("row %s lacks %q:\n%s", name, w, txt)
					}
				}
			}
			// The watchdog's words are explained in their tooltips: what
			// muted and pending mean.
			for name, want := range map[string]string{
				"sitemap":       "taken as known and not alerted; if it is still bad at ",
				"blog-autopush": "an alert goes out once it has been bad for alert_after checks in a row",
			} {
				var titles string
				wd.Eval(`return Array.from(document.querySelectorAll('tr.gate[data-gate="' + arguments[0] + '"] .cond')).map(c => c.title).join('\n');`, &titles, name)
				if !strings.Contains(titles, want) {
					t.Errorf("row %s: the watchdog's tooltip lacks %q: %q", name, want, titles)
				}
			}
			var strip struct {
				Bars  int
				Title string
			}
			wd.Eval(`const bars = document.querySelectorAll('tr.gate[data-gate="ko-followup"] .run');
				return {Bars: bars.length, Title: Array.from(bars).map(b => b.title).join('\n')};`, &strip)
			if strip.Bars != journal.RecentAttempts || !strings.Contains(strip.Title, "KST · success, exit 0 · ") {
				t.Errorf("ko-followup's strip: %+v", strip)
			}
			if dir := os.Getenv("DASHBOARD_SCREENSHOTS"); dir != "" {
				var ph int
				wd.Eval(`window.scrollTo(0, 0); return Math.ceil(document.documentElement.scrollHeight);`, &ph)
				if size.w == 390 {
					ph = size.h // a phone's screen: the first cards
				} else {
					wd.SetWindowSize(size.w, ph+140) // the window's frame is about that much
				}
				path := filepath.Join(dir, size.shot)
				if err := os.WriteFile(path, wd.Screenshot(), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot saved to %s", path)
			}
			if size.w == 1280 {
				layoutActions(t, wd, e, l)
			} else {
				// On a phone the pause form's fields and buttons are
				// reachable too.
				wd.Click(`tr.gate[data-gate="translate"] button.pause`)
				wd.Eval(layoutJS, &l)
				if l.ScrollWidth > l.ClientWidth || len(l.Buttons) > 0 {
					t.Errorf("with the pause form open: width %d > %d, buttons out of view %v", l.ScrollWidth, l.ClientWidth, l.Buttons)
				}
				wd.Click(`tr.form[data-gate="translate"] button.cancel`)
			}
			for _, m := range wd.ConsoleErrors() {
				t.Errorf("browser console: %s", m)
			}
		})
	}
}

// layoutActions: the summary filters the table; the output has no escape
// codes; the pause form by keyboard.
func layoutActions(t *testing.T, wd *browsertest.Browser, e *env, before layout) {
	wd.Click(`#summary button[data-category="blocked"]`)
	var l layout
	wd.Eval(layoutJS, &l)
	if strings.Join(l.Rows, " ") != "blog-autopush" || !strings.Contains(strings.Join(l.Summary, " "), "1blocked*") {
		t.Errorf("filtered to blocked: rows %v, summary %v", l.Rows, l.Summary)
	}
	wd.Click(`#summary button[data-category="blocked"]`)
	wd.Eval(layoutJS, &l)
	if len(l.Rows) != 10 {
		t.Errorf("filter lifted: rows %v", l.Rows)
	}

	wd.Click(`tr.gate[data-gate="translate"] button.output`)
	var out string
	browsertest.WaitFor(t, "translate's output", 10*time.Second, func() bool {
		wd.Eval(`return document.querySelector('tr.output[data-gate="translate"] pre').textContent;`, &out)
		return strings.Contains(out, "ValueError: quota")
	})
	if strings.Contains(out, `\x1b`) || !strings.Contains(out, "Traceback (most recent call last):\nValueError: quota\n") ||
		!strings.Contains(out, "=== cron-gate run r1 started 2026-11-29 18:10:00 KST") {
		t.Errorf("output:\n%s", out)
	}
	wd.Click(`tr.gate[data-gate="translate"] button.output`)

	// The keyboard: the pause button takes Enter, the form opens with the
	// reason focused; Escape closes it and gives the focus back.
	wd.Eval(`document.querySelector('tr.gate[data-gate="ko-followup"] button.pause').focus(); return null;`, nil)
	wd.Press(browsertest.KeyEnter)
	var focus string
	browsertest.WaitFor(t, "the form open, the reason focused", 10*time.Second, func() bool {
		wd.Eval(`const a = document.activeElement; return a ? (a.name || a.className) : '';`, &focus)
		return focus == "reason"
	})
	wd.Press("nope" + browsertest.KeyEscape)
	browsertest.WaitFor(t, "Escape to close the form", 10*time.Second, func() bool {
		var st struct {
			Hidden bool
			Focus  string
		}
		wd.Eval(`return {Hidden: document.querySelector('tr.form[data-gate="ko-followup"]').hidden, Focus: document.activeElement.className};`, &st)
		return st.Hidden && st.Focus == "pause"
	})
	if ps := e.pausesNow(t); len(ps) != 1 {
		t.Fatalf("Escape paused something: %v", ps)
	}
	// Labels name the fields; Enter in the reason submits.
	wd.Press(browsertest.KeyEnter)
	browsertest.WaitFor(t, "the form open again", 10*time.Second, func() bool {
		wd.Eval(`return document.activeElement.name || '';`, &focus)
		return focus == "reason"
	})
	var labels []string
	wd.Eval(`return Array.from(document.querySelectorAll('tr.form[data-gate="ko-followup"] label')).map(l => l.textContent.trim() + ':' + l.querySelector('input').name);`, &labels)
	if strings.Join(labels, " ") != "Reason:reason For:duration" {
		t.Errorf("labels: %v", labels)
	}
	wd.Press("reindex" + browsertest.KeyTab + "2h" + browsertest.KeyEnter)
	browsertest.WaitFor(t, "the pause from the keyboard", 10*time.Second, func() bool {
		p, ok := e.pausesNow(t)["ko-followup"]
		return ok && p.Reason == "reindex" && time.Until(p.Until) > 119*time.Minute
	})
	browsertest.WaitFor(t, "the success message to clear itself", 20*time.Second, func() bool {
		var hidden bool
		wd.Eval(`return document.getElementById('message').hidden;`, &hidden)
		return hidden
	})
	// While paused, cron's tick is skipped as paused; once resumed the
	// gate is judged by what it did before: ok, never "skipped · paused".
	e.journal(t, "ko-followup", journal.Record{Run: "p1", Event: journal.EventSkip, Time: time.Now(),
		Outcome: journal.OutcomeSkipped, Reason: journal.ReasonPaused, Detail: "paused: reindex"})
	// The page shows the pause at its next render, which may come after
	// the state file has it: wait for the button before clicking it.
	browsertest.WaitFor(t, "ko-followup's resume button", 10*time.Second, func() bool {
		var n int
		wd.Eval(`return document.querySelectorAll('tr.gate[data-gate="ko-followup"] button.resume').length;`, &n)
		return n == 1
	})
	wd.Click(`tr.gate[data-gate="ko-followup"] button.resume`)
	browsertest.WaitFor(t, "ko-followup resumed", 10*time.Second, func() bool {
		_, paused := e.pausesNow(t)["ko-followup"]
		var cat string
		wd.Eval(`return document.querySelector('tr.gate[data-gate="ko-followup"]').dataset.category;`, &cat)
		return !paused && cat == "ok"
	})
	if txt := rowText(wd, "ko-followup"); strings.Contains(txt, "skipped") || strings.Contains(strings.ToLower(txt), "paused") {
		t.Errorf("ko-followup, resumed, looks paused or skipped:\n%s", txt)
	}
}

// TestBrowserBanners (issue 16, item 6): "cannot refresh" shows while the
// server cannot answer, and clears itself when it can again.
func TestBrowserBanners(t *testing.T) {
	browsertest.Need(t)
	e := newEnv(t)
	fixture(t, e, time.Now())
	srv, _ := server(t, e.options()) // the config is reloaded after ConfigTTL: at every refresh
	wd := browsertest.Start(t, 1280, 800)
	wd.Open(srv.URL + "/")
	msg := func() (string, bool) {
		var m struct {
			Text   string
			Hidden bool
		}
		wd.Eval(`const m = document.getElementById('message'); return {Text: m.textContent, Hidden: m.hidden};`, &m)
		return m.Text, m.Hidden
	}
	browsertest.WaitFor(t, "the page", 20*time.Second, func() bool {
		var n int
		wd.Eval(`return document.querySelectorAll('tr.gate').length;`, &n)
		return n == 6
	})
	e.mu.Lock()
	e.loadErr = fmt.Errorf("config %s line 3: unknown key gates.x.intervl", filepath.Join(e.dir, "config.toml"))
	e.mu.Unlock()
	browsertest.WaitFor(t, "the cannot-refresh banner", 20*time.Second, func() bool {
		text, hidden := msg()
		return !hidden && strings.Contains(text, "cannot refresh") && strings.Contains(text, "intervl")
	})
	e.mu.Lock()
	e.loadErr = nil
	e.mu.Unlock()
	browsertest.WaitFor(t, "the banner to clear itself", 20*time.Second, func() bool {
		_, hidden := msg()
		return hidden
	})
}
