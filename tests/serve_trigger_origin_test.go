package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeTriggerSameOrigin: "run now" (POST /api/trigger) is refused,
// 403 and nothing run, when a browser sends it from another site with the
// session's cookie and even its key (by Origin, by Sec-Fetch-Site, by
// Referer), or with none of the three headers; the page's own request,
// then, runs. The same rule as every other action (docs/dashboard.md,
// "Security"); the mutant trigger-no-same-origin removes it for this
// route alone, which TestServe's /api/pause checks cannot see.
func TestServeTriggerSameOrigin(t *testing.T) {
	e := newServeEnv(t)
	forged := filepath.Join(e.dir, "ran-forged")
	marker := filepath.Join(e.dir, "ran-page")
	cfg := string(e.origCfg) +
		"\n[gates.forged]\ncommand = [\"touch\", \"" + forged + "\"]\n" +
		"\n[gates.page]\ncommand = [\"touch\", \"" + marker + "\"]\n"
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := e.startServe(t, "127.0.0.1:0")
	login := serveLogin(t, srv.base, srv.actionToken(t))
	session := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, hdr := range []map[string]string{
		session(map[string]string{"Origin": "http://evil.example"}),
		session(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": srv.base}),
		session(map[string]string{"Referer": "http://evil.example/page"}),
		session(nil),
	} {
		res, body := httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"forged"}`), hdr)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST /api/trigger with %v: %d %s, want 403", hdr, res.StatusCode, body)
		}
	}

	// The page's own request runs; once it has, the refused ones have
	// run nothing.
	res, body := httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"page"}`), session(map[string]string{"Origin": srv.base}))
	if res.StatusCode != 200 {
		t.Fatalf("POST /api/trigger from the page: %d %s", res.StatusCode, body)
	}
	e.waitStatus(t, "page's manual run", func(r *statusReport) bool {
		g := r.gate("page")
		return g != nil && g.State == "ok"
	})
	if _, err := os.Stat(forged); err == nil {
		t.Errorf("a cross-site POST /api/trigger ran the gate's command")
	}
	if g := e.status(t).gate("forged"); g != nil && g.State != "never-run" {
		t.Errorf("after the refused POSTs, gate forged is %+v, want never-run", g)
	}
	srv.stop(t)
}
