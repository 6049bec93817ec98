//go:build linux

package dashboard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/tests/browsertest"
)

// timelineJS measures the timeline: its lanes, the page's overflow, and
// the lanes that reach past the viewport.
const timelineJS = `const se = document.scrollingElement;
	const out = {Lanes: [], ScrollWidth: se.scrollWidth, ClientWidth: se.clientWidth, Outside: []};
	for (const l of document.querySelectorAll('#tl-lanes .tl-lane')) {
		out.Lanes.push(l.dataset.gate);
		const r = l.querySelector('.tl-track').getBoundingClientRect();
		if (r.left < 0 || r.right > se.clientWidth + 0.5 || r.width < 100) out.Outside.push(l.dataset.gate + ' ' + JSON.stringify([r.left, r.right]));
	}
	return out;`

type timelineLayout struct {
	Lanes                    []string
	ScrollWidth, ClientWidth int
	Outside                  []string
}

// TestBrowserTimeline: at 1280×800 and 390×844 the timeline has a lane
// per gate, in the table's order, and the page does not scroll sideways;
// a busy skip's mark is reached by Tab and, activated by Enter, lands on
// (focuses, highlights, scrolls to) the bar of the run that held its
// lock; a mark held by a process alone says its pid. With
// DASHBOARD_SCREENSHOTS=DIR it saves DIR/dashboard-timeline.png and
// DIR/dashboard-timeline-390.png (docs/ has them). The same through the
// real binaries: tests/timeline_test.go.
func TestBrowserTimeline(t *testing.T) {
	browsertest.Need(t)
	if !lockfile.ReadLockTable().Readable() {
		t.Skip("/proc/locks is not readable here")
	}
	e := newEnv(t)
	now := time.Now()
	order := layoutFixture(t, e, now)
	// ko-followup skipped twice while the rebalance's run held its slot,
	// and once for an old worker's lock, then ran.
	holder := journal.HeldBy{Pid: os.Getpid(), Gate: "classifier-codex-provider-slot-rebalance", Run: "running-classifier-codex-provider-slot-rebalance"}
	for i, at := range []time.Duration{-100 * time.Minute, -70 * time.Minute} {
		e.journal(t, "ko-followup", journal.Record{Run: fmt.Sprintf("busy%d", i), Event: journal.EventEnd, Time: now.Add(at),
			Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Exit: code(75), HeldBy: []journal.HeldBy{holder}})
	}
	e.journal(t, "ko-followup", journal.Record{Run: "legacy", Event: journal.EventSkip, Time: now.Add(-50 * time.Minute),
		Outcome: journal.OutcomeSkipped, Reason: journal.ReasonLegacyLock, HeldBy: []journal.HeldBy{{Pid: 4711, Command: "python3 old_followup.py \u202e\x1b[31mevil"}}})
	e.run(t, "ko-followup", now.Add(-40*time.Minute), 30*time.Second, journal.OutcomeSuccess, 0)
	opts := e.options()
	opts.TimeZone = seoul(t)
	srv, h := server(t, opts)
	target := "run-classifier-codex-provider-slot-rebalance-running-classifier-codex-provider-slot-rebalance"
	for _, size := range []struct {
		w, h int
		shot string
	}{{1280, 800, "dashboard-timeline.png"}, {390, 844, "dashboard-timeline-390.png"}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			wd := openPage(t, srv.URL, h, size.w, size.h)
			var l timelineLayout
			browsertest.WaitFor(t, "the timeline's ten lanes", 20*time.Second, func() bool {
				wd.Eval(timelineJS, &l)
				return len(l.Lanes) == 10
			})
			if fmt.Sprint(l.Lanes) != fmt.Sprint(order) {
				t.Errorf("lanes:\n got %v\nwant %v", l.Lanes, order)
			}
			if l.ScrollWidth > l.ClientWidth {
				t.Errorf("the page scrolls sideways: scrollWidth %d > clientWidth %d", l.ScrollWidth, l.ClientWidth)
			}
			for _, o := range l.Outside {
				t.Errorf("lane outside the viewport or too narrow: %s", o)
			}
			// Tab from the lane's last bar reaches the first busy mark.
			var ok bool
			wd.Eval(`const lane = document.querySelector('.tl-lane[data-gate="ko-followup"]');
				const bars = lane.querySelectorAll('.tl-run'); bars[bars.length - 1].focus();
				return document.activeElement === bars[bars.length - 1];`, &ok)
			if !ok {
				t.Fatal("cannot focus ko-followup's last bar")
			}
			wd.Press("\t")
			var mark struct{ ID, Label, Href string }
			wd.Eval(`const a = document.activeElement; return {ID: a.id, Label: a.getAttribute('aria-label') || '', Href: a.getAttribute('href') || ''};`, &mark)
			if mark.ID != "skip-ko-followup-busy0-0" || mark.Href != "#"+target {
				t.Fatalf("Tab reached %+v, want the busy mark linking to #%s", mark, target)
			}
			for _, w := range []string{"skipped at ", "busy", "held by gate classifier-codex-provider-slot-rebalance run running-"} {
				if !strings.Contains(mark.Label, w) {
					t.Errorf("the mark's accessible name %q lacks %q", mark.Label, w)
				}
			}
			wd.Press("\r")
			var landed struct {
				ID     string
				Target bool
				InView bool
				Hash   string
			}
			browsertest.WaitFor(t, "Enter to land on the holding run's bar", 10*time.Second, func() bool {
				wd.Eval(`const a = document.activeElement; const r = a.getBoundingClientRect();
					return {ID: a.id, Target: a.classList.contains('tl-target'), Hash: location.hash,
						InView: r.bottom > 0 && r.top < window.innerHeight && r.left >= 0 && r.right <= document.scrollingElement.clientWidth + 0.5};`, &landed)
				return landed.ID == target
			})
			if !landed.Target || !landed.InView || landed.Hash != "#"+target {
				t.Errorf("landed on the bar but %+v", landed)
			}
			// The legacy mark names the process: a button, its words in the
			// detail line once pressed.
			wd.Click(`#skip-ko-followup-legacy-2`)
			d := wd.Text("#tl-detail")
			if !strings.Contains(d, "pid 4711") || strings.ContainsAny(d, "\u202e\x1b") {
				t.Errorf("the legacy mark's detail: %q", d)
			}
			// Its command, where commands are shown, with its bidi and
			// control characters escaped, never acting.
			if lockfile.CommandsShownToAll() && !strings.Contains(d, `old_followup.py \u202e\x1b[31mevil`) {
				t.Errorf("the legacy mark's detail lacks the escaped command: %q", d)
			}
			// A week: the toggle, then the lanes again.
			wd.Click("#tl-7")
			browsertest.WaitFor(t, "the 7-day timeline", 10*time.Second, func() bool {
				var days string
				wd.Eval(`return document.getElementById('timeline').dataset.loaded || '';`, &days)
				return days == "7"
			})
			wd.Click("#tl-1")
			browsertest.WaitFor(t, "the 24-hour timeline", 10*time.Second, func() bool {
				var days string
				wd.Eval(`return document.getElementById('timeline').dataset.loaded || '';`, &days)
				return days == "1"
			})
			wd.Eval(timelineJS, &l)
			if l.ScrollWidth > l.ClientWidth {
				t.Errorf("after the toggle the page scrolls sideways: %d > %d", l.ScrollWidth, l.ClientWidth)
			}
			if dir := os.Getenv("DASHBOARD_SCREENSHOTS"); dir != "" {
				// The picture shows a followed link: the holder's bar
				// highlighted, the detail line saying who held what.
				wd.Click(`#skip-ko-followup-busy1-1`)
				var ph int
				wd.Eval(`document.getElementById('timeline').scrollIntoView({block: 'start'});
					return Math.ceil(document.getElementById('timeline').getBoundingClientRect().height);`, &ph)
				if size.w != 390 {
					wd.SetWindowSize(size.w, ph+180)
					wd.Eval(`document.getElementById('timeline').scrollIntoView({block: 'start'}); return 0;`, &ph)
				}
				path := filepath.Join(dir, size.shot)
				if err := os.WriteFile(path, wd.Screenshot(), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot saved to %s", path)
			}
			for _, m := range wd.ConsoleErrors() {
				t.Errorf("browser console: %s", m)
			}
		})
	}
}
