//go:build linux

package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/lockfile"
)

func getTimeline(t *testing.T, base, query string) (int, string, *Timeline) {
	t.Helper()
	code, _, body := do(t, "GET", base+"/api/timeline"+query, nil, nil)
	if code != http.StatusOK {
		return code, body, nil
	}
	var tl Timeline
	if err := json.Unmarshal([]byte(body), &tl); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return code, body, &tl
}

func laneOf(t *testing.T, tl *Timeline, name string) *Lane {
	t.Helper()
	for i := range tl.Lanes {
		if tl.Lanes[i].Gate == name {
			return &tl.Lanes[i]
		}
	}
	t.Fatalf("no lane %s in %+v", name, tl.Lanes)
	return nil
}

// days=1 is the default; 7 reaches further back; anything else is 400.
// Lanes come problems first, as the table has them; a busy skip names the
// run that held its lock, and a holder that is no run its pid.
func TestTimelineDays(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	fixture(t, e, now)
	e.run(t, "terms", now.Add(-3*24*time.Hour), time.Minute, journal.OutcomeSuccess, 0)
	e.journal(t, "ko-followup", journal.Record{Run: "b1", Event: journal.EventEnd, Time: now.Add(-10 * time.Minute),
		Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Exit: code(75),
		HeldBy: []journal.HeldBy{{Pid: 77, PidStart: 9, Gate: "translate", Run: "r-translate", Command: "withlock --paths x -- sleep 9"}}})
	e.journal(t, "ko-followup", journal.Record{Run: "b2", Event: journal.EventSkip, Time: now.Add(-9 * time.Minute),
		Outcome: journal.OutcomeSkipped, Reason: journal.ReasonLegacyLock,
		HeldBy: []journal.HeldBy{{Pid: 78, Command: "python3 old.py"}}, HeldByMore: 2})
	srv, _ := server(t, e.options())

	_, _, tl := getTimeline(t, srv.URL, "")
	if tl == nil || tl.V != 1 || tl.Days != 1 || len(tl.Lanes) != 6 {
		t.Fatalf("default: %+v", tl)
	}
	if tl.Lanes[0].Gate != "translate" || tl.Lanes[0].Category != "failing" {
		t.Errorf("first lane %s (%s), want the failing translate first", tl.Lanes[0].Gate, tl.Lanes[0].Category)
	}
	if n := len(laneOf(t, tl, "terms").Runs); n != 0 {
		t.Errorf("terms: %d runs in 24h, want none (its run was 3 days ago)", n)
	}
	if r := laneOf(t, tl, "blog-worker-health").Runs; len(r) != 2 || r[1].Outcome != "running" {
		t.Errorf("blog-worker-health runs: %+v, want a success and one running", r)
	}
	ko := laneOf(t, tl, "ko-followup")
	if len(ko.Skips) != 2 {
		t.Fatalf("ko-followup skips: %+v", ko.Skips)
	}
	busy, legacy := ko.Skips[0], ko.Skips[1]
	if busy.Reason != journal.ReasonBusy || len(busy.Holders) != 1 || busy.Holders[0].Gate != "translate" || busy.Holders[0].Run != "r-translate" {
		t.Errorf("busy skip: %+v", busy)
	}
	if legacy.Reason != journal.ReasonLegacyLock || len(legacy.Holders) != 1 || legacy.Holders[0].Pid != 78 || legacy.HoldersMore != 2 {
		t.Errorf("legacy skip: %+v", legacy)
	}
	// The commands follow HideCommands' rule.
	if shown := lockfile.CommandsShownToAll(); (legacy.Holders[0].Command != "") != shown {
		t.Errorf("command %q shown with CommandsShownToAll %v", legacy.Holders[0].Command, shown)
	}

	_, _, tl = getTimeline(t, srv.URL, "?days=7")
	if tl == nil || tl.Days != 7 || len(laneOf(t, tl, "terms").Runs) != 1 {
		t.Errorf("days=7: %+v", tl)
	}
	for _, q := range []string{"?days=2", "?days=", "?days=7&days=1", "?days=-1", "?days=1e0", "?days=%00"} {
		if code, body, _ := getTimeline(t, srv.URL, q); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want 400", q, code, body)
		}
	}
}

// A journal far past the byte bound is read from its end only, and the
// lane says so; a torn last line (a record being written) is no record;
// control and bidirectional characters in names and commands travel
// escaped.
func TestTimelineBounds(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	name := "huge"
	e.declare(&gate.GateConfig{Name: name})
	j, err := journal.Open(e.dir, name, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	// Write straight to the file: thousands of Appends would fsync each.
	var b strings.Builder
	long := strings.Repeat("x", 1000)
	for i := range 5000 {
		at := now.Add(-time.Duration(5000-i) * 10 * time.Second)
		rec, _ := json.Marshal(journal.Record{V: 1, Gate: name, Run: "r", Event: journal.EventSkip, Time: at,
			Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy, Detail: long})
		b.Write(append(rec, '\n'))
	}
	evil := "\u202eevil\x1b[31m"
	rec, _ := json.Marshal(journal.Record{V: 1, Gate: name, Run: "held", Event: journal.EventEnd, Time: now.Add(-time.Second),
		Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy,
		HeldBy: []journal.HeldBy{{Pid: 5, Gate: "g" + evil, Run: "r" + evil, Command: "sh -c " + evil}}})
	b.Write(append(rec, '\n'))
	b.WriteString(`{"v":1,"gate":"huge","run":"torn","event":"skip","time":"` + now.Format(time.RFC3339Nano) + `","outcome":"skipped","reason":"paused"`)
	j.Close()
	if err := os.WriteFile(filepath.Join(e.dir, "gates", name, "journal.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := server(t, e.options())
	_, body, tl := getTimeline(t, srv.URL, "")
	if tl == nil {
		t.Fatalf("timeline: %s", body)
	}
	ln := laneOf(t, tl, name)
	if ln.Cut == "" || len(ln.Skips) == 0 || len(ln.Skips) > timelineItems {
		t.Errorf("lane of a %d-byte journal: cut %q, %d skips", b.Len(), ln.Cut, len(ln.Skips))
	}
	if len(body) > 4*timelineBytes {
		t.Errorf("answer of %d bytes", len(body))
	}
	last := ln.Skips[len(ln.Skips)-1]
	if last.Run != "held" || last.Reason != journal.ReasonBusy {
		t.Errorf("last mark %+v, want the held one (the torn line is none)", last)
	}
	if strings.ContainsAny(body, "\u202e\x1b") || !strings.Contains(body, `\u202e`) {
		t.Errorf("control or bidi characters raw in the answer")
	}
	if last.Holders[0].Gate != "g"+evil {
		t.Errorf("holder gate %q: not the stored name", last.Holders[0].Gate)
	}
}

// Over the item bound, the newest runs and skips are kept.
func TestTimelineItemBound(t *testing.T) {
	now := time.Now()
	var recs []journal.Record
	for i := range timelineItems + 500 {
		at := now.Add(-time.Duration(timelineItems+500-i) * time.Second)
		recs = append(recs, journal.Record{Run: "s", Event: journal.EventSkip, Time: at, Outcome: journal.OutcomeSkipped, Reason: journal.ReasonBusy})
	}
	ln := Lane{}
	ln.fill(recs, &GateSummary{}, now.Add(-24*time.Hour), now, newZoner(time.UTC), true)
	if len(ln.Skips) != timelineItems || ln.Cut == "" || !ln.Skips[len(ln.Skips)-1].Time.Equal(recs[len(recs)-1].Time) {
		t.Errorf("%d skips, cut %q", len(ln.Skips), ln.Cut)
	}
}

// The page orders its table and counts its summary by app.js's
// CATEGORIES; the timeline's lanes by summary.go's categories: one list.
func TestCategoriesAgree(t *testing.T) {
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const CATEGORIES = \[([^\]]*)\];`).FindSubmatch(js)
	if m == nil {
		t.Fatal("app.js has no CATEGORIES list")
	}
	var got []string
	for _, q := range strings.Split(string(m[1]), ",") {
		got = append(got, strings.Trim(strings.TrimSpace(q), "'"))
	}
	if strings.Join(got, " ") != strings.Join(categories, " ") {
		t.Errorf("app.js's CATEGORIES %v, summary.go's categories %v", got, categories)
	}
	if !bytes.Contains(js, []byte("function category(g) { return g.category || g.state; }")) {
		t.Error("app.js decides a category itself again; it reads the summary's")
	}
}

// The answer's byte bound counts what was read: forty small journals are
// all read (2 MiB each would pass the bound at 32).
func TestTimelineManyGates(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	for i := range 40 {
		name := fmt.Sprintf("g%02d", i)
		e.declare(&gate.GateConfig{Name: name})
		e.run(t, name, now.Add(-time.Hour), time.Second, journal.OutcomeSuccess, 0)
	}
	srv, _ := server(t, e.options())
	_, body, tl := getTimeline(t, srv.URL, "")
	if tl == nil || len(tl.Lanes) != 40 {
		t.Fatalf("%s", body)
	}
	for _, ln := range tl.Lanes {
		if ln.Cut != "" || len(ln.Runs) != 1 {
			t.Errorf("lane %s: cut %q, %d runs", ln.Gate, ln.Cut, len(ln.Runs))
		}
	}
}
