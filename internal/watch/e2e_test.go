package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/safetext"
)

// End to end, in process: a config file with a real command notifier (a
// shell script writing its arguments to a file), a real webhook receiver
// (an HTTP server on 127.0.0.1), a crontab command, real gate runs, the
// system probe and the real clock.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var hooks []Message
	var failHook atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		if failHook.Load() {
			w.WriteHeader(503)
			return
		}
		var m Message
		if err := json.Unmarshal(data, &m); err != nil || r.URL.Path != "/hook" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook got %s %s %q", r.Method, r.URL, data)
		}
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
	}))
	defer srv.Close()
	takeHooks := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, m := range hooks {
			out = append(out, m.Kind+" "+m.Gate+"/"+m.Condition)
		}
		hooks = nil
		return out
	}
	args := filepath.Join(dir, "args")
	notify := script(t, dir, "notify", `{ printf '%s|' "$@" | tr '\n' '~'; echo "$CRON_GATE_ALERT_KIND"; } >> `+args+"\n")
	takeArgs := func() []string {
		data, _ := os.ReadFile(args)
		os.Remove(args)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	crontab := filepath.Join(dir, "crontab")
	os.WriteFile(crontab, []byte("*/30 * * * * cron-gate translate -- python3 t.py\n0 * * * * cron-gate terms -- true\n"), 0o644)
	cfgPath := filepath.Join(dir, "config.toml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`state_dir = %q
[check]
crontab_command = ["cat", %q]
cron_d = []

[[notify]]
type = "command"
argv = [%q, "-g", "blog"]

[[notify]]
type = "webhook"
url = "%s/hook"
retries = 0

[gates.translate]
interval = "4h"

[gates.terms]
interval = "30m"
`, filepath.Join(dir, "state"), crontab, notify, srv.URL)), 0o644)
	cfg, err := gateconf.Load(cfgPath, false)
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, argv ...string) {
		gate.Run(gate.Invocation{Gate: name, Argv: argv, Config: cfg, Out: &safetext.Printer{Prog: "cron-gate", W: io.Discard}})
	}
	check := func() *Result {
		t.Helper()
		res, err := New(cfg, gate.Pauses{}, io.Discard).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	expect := func(want ...string) *Result {
		t.Helper()
		res := check()
		h := takeHooks()
		if strings.Join(h, "; ") != strings.Join(want, "; ") {
			t.Fatalf("webhook got %q, want %q (%+v)", h, want, res.Notifications)
		}
		return res
	}

	run("translate", "true")
	run("terms", "true")
	if res := expect(); !res.FirstRun {
		t.Fatal("not a first run")
	}
	run("translate", "sh", "-c", "exit 3")
	expect()
	expect("alert translate/failed")
	got := takeArgs()
	if len(got) != 1 || !strings.HasPrefix(got[0], "-g|blog|cron-gate: translate failed|the last run ended: failure, exit 3 at ") ||
		!strings.Contains(got[0], "~Bad since ") || !strings.HasSuffix(got[0], "|alert") {
		t.Fatalf("command notifier got %q", got)
	}
	// The gate leaves the crontab; the webhook is down for the alert.
	os.WriteFile(crontab, []byte("0 * * * * cron-gate terms -- true\n"), 0o644)
	run("translate", "true")
	res := expect("recovery translate/failed")
	if got := takeArgs(); len(got) != 1 || !strings.HasPrefix(got[0], "-g|blog|cron-gate: translate recovered (failed)|") {
		t.Fatalf("command notifier got %q", got)
	}
	if o := obsOf(t, res, "translate", CondUnscheduled); o.Verdict != Bad || o.Count != 1 {
		t.Fatalf("unscheduled: %+v", o)
	}
	failHook.Store(true)
	res = expect()
	if !res.NotifyFailed() || len(takeArgs()) != 1 {
		t.Fatalf("alert with the webhook down: %+v", res.Notifications)
	}
	failHook.Store(false)
	expect("alert translate/unscheduled") // the webhook alone gets it now
	if got := takeArgs(); len(got) != 0 {
		t.Fatalf("command notifier told twice: %q", got)
	}
	os.WriteFile(crontab, []byte("*/30 * * * * /usr/local/bin/cron-gate -q translate -- x\n0 * * * * cron-gate terms -- true\n"), 0o644)
	expect("recovery translate/unscheduled")
	if got := takeArgs(); len(got) != 1 {
		t.Fatalf("command notifier got %q", got)
	}
}
