package tests

import (
	"net/http"
	"os"
	"os/exec"
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

// TestServeTriggerRunsAsOwner: the dashboard's "run now" (served as root,
// as the shipped unit serves it) runs a nobody-owned cron.d line as
// nobody, with cron's environment and in nobody's HOME (/ when it cannot
// be entered), never with the dashboard's token: by the bearer POST of a
// script and by the page's button (session and key) alike. It once ran
// the line as root with serve's environment, CRON_GATE_TOKEN included.
func TestServeTriggerRunsAsOwner(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); os.Geteuid() != 0 || err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root to run a line as its owner, and CI is set: it must run in CI")
		}
		t.Skip("needs root to run a line as its owner")
	}
	e := newServeEnv(t)
	// nobody must reach the config its line reads, and write its output
	// and state somewhere of its own.
	for _, d := range []string{e.dir, filepath.Dir(e.dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, nbstate, crond := filepath.Join(e.dir, "out"), filepath.Join(e.dir, "nbstate"), filepath.Join(e.dir, "cron.d")
	for _, d := range []string{out, nbstate, crond} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{out, nbstate} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "[check]\ncrontab_command = []\ncron_d = [\"" + crond + "\"]\n\n[gates.build]\n"
	tab := "CRON_GATE_CONFIG=" + e.config + "\nCRON_GATE_STATE_DIR=" + nbstate + "\nCRON_GATE_CACHE_DIR=off\n" +
		"PATH=" + binDir + ":/usr/bin:/bin\n" +
		"* * * * * nobody cron-gate build -- sh -c 'echo uid=$(id -u) gid=$(id -g) pwd=$(pwd); env' > " + out + "/build.txt 2>&1\n"
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crond, "jobs"), []byte(tab), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "s3cr3t-dashboard-token-0123456789"
	srv := e.startServe(t, "127.0.0.1:0", "CRON_GATE_TOKEN="+token)
	login := serveLogin(t, srv.base, token)
	ways := []struct {
		name string
		hdr  map[string]string
	}{
		{"bearer", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}},
		{"button", map[string]string{"Content-Type": "application/json", "Cookie": login.cookie, "X-CSRF-Token": login.key, "Origin": srv.base}},
	}
	for i, w := range ways {
		os.Remove(filepath.Join(out, "build.txt"))
		res, body := httpDo(t, "POST", srv.base+"/api/trigger", strings.NewReader(`{"gate":"build"}`), w.hdr)
		if res.StatusCode != 200 {
			t.Fatalf("%s: POST /api/trigger: %d %s", w.name, res.StatusCode, body)
		}
		journal := filepath.Join(nbstate, "gates", "build", "journal.jsonl")
		deadline := time.Now().Add(serveDeadline)
		for {
			data, _ := os.ReadFile(journal)
			if strings.Count(string(data), `"trigger":"manual"`) >= 2*(i+1) { // start and end of each run
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no manual run of build recorded within %v: %s", w.name, serveDeadline, data)
			}
			time.Sleep(20 * time.Millisecond)
		}
		data, err := os.ReadFile(filepath.Join(out, "build.txt"))
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		seen := string(data)
		if !strings.Contains(seen, "uid=65534 gid=65534 pwd=/\n") || !strings.Contains(seen, "\nLOGNAME=nobody\n") ||
			!strings.Contains(seen, "\nPATH="+binDir+":/usr/bin:/bin\n") {
			t.Errorf("%s: the line did not run as nobody with cron's environment in /:\n%s", w.name, seen)
		}
		if strings.Contains(seen, token) || strings.Contains(seen, "CRON_GATE_TOKEN") {
			t.Errorf("%s: the dashboard's token reached the command:\n%s", w.name, seen)
		}
	}
	srv.stop(t)
}
