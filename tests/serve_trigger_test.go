package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeTrigger: the dashboard's "run now" (POST /api/trigger, with
// the session and its key as every action) starts a run of the real
// binary through the gate, recorded as manual by the dashboard; a paused
// gate's run is skipped (no force from the page); a POST without the key
// starts nothing.
func TestServeTrigger(t *testing.T) {
	e := newServeEnv(t)
	marker := filepath.Join(e.dir, "ran-now")
	cfg := string(e.origCfg) + "\n[gates.adhoc]\ncommand = [\"touch\", \"" + marker + "\"]\n" +
		"\n[gates.held]\npaused = true\ncommand = [\"touch\", \"" + marker + ".held\"]\n"
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := e.startServe(t, "127.0.0.1:0")
	login := serveLogin(t, srv.base, srv.actionToken(t))
	page := map[string]string{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key, "Origin": srv.base}

	// Without the key: 403, nothing runs.
	res, body := httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"adhoc"}`),
		map[string]string{"Content-Type": "application/json", "Cookie": login.cookie, "Origin": srv.base})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("POST /api/trigger without the key: %d %s", res.StatusCode, body)
	}

	res, body = httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"adhoc"}`), page)
	if res.StatusCode != 200 || !strings.Contains(string(body), "started a run of gate adhoc") {
		t.Fatalf("POST /api/trigger: %d %s", res.StatusCode, body)
	}
	e.waitStatus(t, "adhoc's manual run", func(r *statusReport) bool {
		g := r.gate("adhoc")
		return g != nil && g.State == "ok"
	})
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(e.dir, "state", "gates", "adhoc", "journal.jsonl"))
	if err != nil || !strings.Contains(string(data), `"trigger":"manual"`) || !strings.Contains(string(data), `(dashboard) from 127.0.0.1`) {
		t.Fatalf("journal of adhoc: %v\n%s", err, data)
	}

	// A paused gate: the run is started and skipped, as a tick's would be.
	res, body = httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"held"}`), page)
	if res.StatusCode != 200 {
		t.Fatalf("POST /api/trigger held: %d %s", res.StatusCode, body)
	}
	deadline := time.Now().Add(serveDeadline)
	for {
		data, _ := os.ReadFile(filepath.Join(e.dir, "state", "gates", "held", "journal.jsonl"))
		if strings.Contains(string(data), `"reason":"paused"`) && strings.Contains(string(data), `"trigger":"manual"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no manual paused skip of held within %v: %s", serveDeadline, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(marker + ".held"); err == nil {
		t.Fatal("a paused gate ran from the dashboard")
	}
	srv.stop(t)
}
