package tests

// TestTimeline: who blocked whom, end to end through the real binaries.
// Gate "holder" runs `withlock --paths x.md -- sleep` and holds x.md;
// gate "blocked" runs `withlock --paths x.md -- true` and is skipped
// busy. Its end record names the holder's run (found at skip time by
// walking up from the lock's holder, withlock, to the cron-gate run whose
// command it is); why points to the timeline; /api/timeline shows it; and
// in headless Chromium at 1280 and 390 pixels the busy mark is reached by
// Tab and Enter lands on the holding run's bar. Every wait polls with a
// deadline; the holder is killed (its process group) when the test ends.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/browsertest"
)

type timelineRecord struct {
	Run      string `json:"run"`
	Event    string `json:"event"`
	Reason   string `json:"reason"`
	Outcome  string `json:"outcome"`
	ChildPid int    `json:"child_pid"`
	HeldBy   []struct {
		Pid  int    `json:"pid"`
		Gate string `json:"gate"`
		Run  string `json:"run"`
	} `json:"held_by"`
}

// journalRecords reads a gate's journal.jsonl.
func journalRecords(t *testing.T, dir, gate string) []timelineRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "state", "gates", gate, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []timelineRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r timelineRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

func TestTimeline(t *testing.T) {
	e := newServeEnv(t)
	e.env = append(e.env, "WITHLOCK_LOCK_DIR="+filepath.Join(e.dir, "locks"))
	x := filepath.Join(e.dir, "x.md")
	ready := filepath.Join(e.dir, "holder.ready")
	if err := os.WriteFile(x, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hold := exec.Command(filepath.Join(binDir, "cron-gate"), "--config", e.config, "holder", "--",
		filepath.Join(binDir, "withlock"), "--paths", x, "--", "sh", "-c", "touch "+ready+"; exec sleep 300")
	hold.Env, hold.Dir = e.env, e.dir
	hold.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	// cron-gate runs its command in a process group of its own, which a
	// KILL to cron-gate's would leave running: TERM, which cron-gate
	// forwards to the command's group and waits for, then KILL to both
	// groups if that has not ended it.
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { hold.Wait(); close(done) }()
		syscall.Kill(hold.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(serveDeadline):
			for _, r := range journalRecords(t, e.dir, "holder") {
				if r.ChildPid > 0 {
					syscall.Kill(-r.ChildPid, syscall.SIGKILL)
				}
			}
			syscall.Kill(-hold.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	browsertest.WaitFor(t, "the holder's command to start", serveDeadline, func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	var holderRun string
	for _, r := range journalRecords(t, e.dir, "holder") {
		if r.Event == "start" {
			holderRun = r.Run
		}
	}
	if holderRun == "" {
		t.Fatal("the holder's run has no start record")
	}

	_, stderr, code := e.run(t, "--config", e.config, "blocked", "--", filepath.Join(binDir, "withlock"), "--paths", x, "--", "true")
	if code != 75 {
		t.Fatalf("the blocked gate: exit %d, want 75 (busy); stderr: %s", code, stderr)
	}
	recs := journalRecords(t, e.dir, "blocked")
	end := recs[len(recs)-1]
	if end.Event != "end" || end.Reason != "busy" || len(end.HeldBy) != 1 {
		t.Fatalf("blocked's last record: %+v, want a busy end with one holder", end)
	}
	if h := end.HeldBy[0]; h.Gate != "holder" || h.Run != holderRun || h.Pid <= 0 {
		t.Fatalf("held by %+v, want gate holder run %s", h, holderRun)
	}

	out, _, code := e.run(t, "--config", e.config, "why", "blocked")
	want := fmt.Sprintf("  held by gate holder run %s (see the dashboard's timeline: /#run-holder-%s)\n", holderRun, holderRun)
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("why blocked (exit %d) lacks %q:\n%s", code, want, out)
	}
	out, _, _ = e.run(t, "--config", e.config, "why", "blocked", "--json")
	var wr struct {
		HeldBy []struct{ Gate, Run string } `json:"held_by"`
	}
	if err := json.Unmarshal([]byte(out), &wr); err != nil || len(wr.HeldBy) != 1 || wr.HeldBy[0].Gate != "holder" || wr.HeldBy[0].Run != holderRun {
		t.Errorf("why --json held_by: %+v (%v)", wr.HeldBy, err)
	}

	srv := e.startServe(t, "127.0.0.1:0")
	token := srv.actionToken(t)
	res, body := httpDo(t, "GET", srv.base+"/api/timeline", nil, nil)
	var tl struct {
		Lanes []struct {
			Gate string `json:"gate"`
			Runs []struct {
				Run, Outcome string
			} `json:"runs"`
			Skips []struct {
				Reason  string `json:"reason"`
				Holders []struct{ Gate, Run string }
			} `json:"skips"`
		} `json:"lanes"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &tl) != nil {
		t.Fatalf("/api/timeline: %d %s", res.StatusCode, body)
	}
	found := map[string]bool{}
	for _, ln := range tl.Lanes {
		for _, r := range ln.Runs {
			if ln.Gate == "holder" && r.Run == holderRun && r.Outcome == "running" {
				found["holder's run"] = true
			}
		}
		for _, s := range ln.Skips {
			if ln.Gate == "blocked" && s.Reason == "busy" && len(s.Holders) == 1 && s.Holders[0].Gate == "holder" && s.Holders[0].Run == holderRun {
				found["blocked's busy skip"] = true
			}
		}
	}
	if !found["holder's run"] || !found["blocked's busy skip"] {
		t.Errorf("/api/timeline: found %v: %s", found, body)
	}
	for q, want := range map[string]int{"?days=7": 200, "?days=3": 400} {
		if res, body := httpDo(t, "GET", srv.base+"/api/timeline"+q, nil, nil); res.StatusCode != want {
			t.Errorf("/api/timeline%s: %d, want %d: %s", q, res.StatusCode, want, body)
		}
	}

	t.Run("browser", func(t *testing.T) {
		browsertest.Need(t)
		target := "run-holder-" + holderRun
		for _, size := range [][2]int{{1280, 800}, {390, 844}} {
			t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
				wd := browsertest.Start(t, size[0], size[1])
				if size[0] < 500 {
					wd.Viewport(size[0], size[1])
				}
				wd.Open(srv.base + "/?token=" + url.QueryEscape(token))
				var lanes []string
				browsertest.WaitFor(t, "both lanes", serveDeadline, func() bool {
					wd.Eval(`return Array.from(document.querySelectorAll('#tl-lanes .tl-lane')).map(l => l.dataset.gate);`, &lanes)
					return strings.Contains(strings.Join(lanes, " "), "blocked") && strings.Contains(strings.Join(lanes, " "), "holder")
				})
				var w struct{ Scroll, Client int }
				wd.Eval(`const se = document.scrollingElement; return {Scroll: se.scrollWidth, Client: se.clientWidth};`, &w)
				if w.Scroll > w.Client {
					t.Errorf("the page scrolls sideways: scrollWidth %d > clientWidth %d", w.Scroll, w.Client)
				}
				// From the window toggle, Tab until the busy mark has the
				// focus: it is reachable by keyboard.
				var ok bool
				wd.Eval(`document.getElementById('tl-7').focus(); return document.activeElement.id === 'tl-7';`, &ok)
				if !ok {
					t.Fatal("cannot focus the 7d toggle")
				}
				var href string
				for range 40 {
					wd.Press("\t")
					wd.Eval(`const a = document.activeElement; return a.classList.contains('tl-mark') ? a.getAttribute('href') || '' : '';`, &href)
					if href != "" {
						break
					}
				}
				if href != "#"+url.PathEscape(target) && href != "#"+target {
					t.Fatalf("Tab reached a mark linking to %q, want #%s", href, target)
				}
				wd.Press("\r")
				var landed struct {
					ID     string
					Target bool
					InView bool
				}
				browsertest.WaitFor(t, "Enter to land on the holder's bar", serveDeadline, func() bool {
					wd.Eval(`const a = document.activeElement; const r = a.getBoundingClientRect();
						return {ID: a.id, Target: a.classList.contains('tl-target'),
							InView: r.bottom > 0 && r.top < window.innerHeight && r.left >= 0 && r.right <= document.scrollingElement.clientWidth + 0.5};`, &landed)
					return landed.ID == target
				})
				if !landed.Target || !landed.InView {
					t.Errorf("on the holder's bar, but %+v", landed)
				}
				for _, m := range wd.ConsoleErrors() {
					t.Errorf("browser console: %s", m)
				}
			})
		}
	})
	srv.stop(t)
}
