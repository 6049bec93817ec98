//go:build etcd

package etcd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cgHost is one "host" running cron-gate: its own config (naming the
// test's cluster and prefix), state dir and config cache.
type cgHost struct {
	t      *testing.T
	dir    string
	config string
}

func newCGHost(t *testing.T, name, extra string) *cgHost {
	t.Helper()
	return newCGHostAt(t, name, cl.Endpoints(), extra)
}

// newCGHostAt is a host whose config names the cluster at endpoints, with
// extra lines in its [etcd] table.
func newCGHostAt(t *testing.T, name string, endpoints []string, extra string) *cgHost {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	eps := make([]string, 0, 3)
	for _, e := range endpoints {
		eps = append(eps, fmt.Sprintf("%q", e))
	}
	cfg := fmt.Sprintf("state_dir = %q\n\n[etcd]\nendpoints = [%s]\nprefix = %q\ntimeout = \"2s\"\n%s\n[gates.g]\ninterval = \"5m\"\n",
		filepath.Join(dir, "state"), strings.Join(eps, ", "), prefix(t), extra)
	h := &cgHost{t: t, dir: dir, config: filepath.Join(dir, "config.toml")}
	if err := os.WriteFile(h.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// cg runs cron-gate (which hands an [etcd] config to cron-gate-etcd) as
// this host.
func (h *cgHost) cg(args ...string) result {
	h.t.Helper()
	return run(h.t, []string{"CRON_GATE_CACHE_DIR=" + filepath.Join(h.dir, "cache")}, "cron-gate", append([]string{"--config", h.config}, args...)...)
}

func (h *cgHost) status(gate string) map[string]any {
	h.t.Helper()
	r := h.cg("status", gate, "--json")
	if r.code != 0 {
		h.t.Fatalf("status: %d %s", r.code, r.stderr)
	}
	var rep struct {
		Gates    []map[string]any `json:"gates"`
		Warnings []string         `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Gates) != 1 {
		h.t.Fatalf("status: %v %s", err, r.stdout)
	}
	return rep.Gates[0]
}

// A pause set with cron-gate on one host stops the gate on every host; a
// resume on another host lifts it everywhere; status shows who paused and
// why on every host.
func TestCronGateSharedPause(t *testing.T) {
	need(t)
	a, b := newCGHost(t, "a", ""), newCGHost(t, "b", "")
	if r := b.cg("g", "--", "true"); r.code != 0 {
		t.Fatalf("b runs before any pause: %d %s", r.code, r.stderr)
	}
	if r := a.cg("pause", "g", "--reason", "quota exhausted"); r.code != 0 {
		t.Fatalf("pause on a: %d %s", r.code, r.stderr)
	}
	for _, h := range []*cgHost{a, b} {
		r := h.cg("-v", "g", "--", "sh", "-c", "echo ran") // -v: the skip is said on a pipe too
		if r.code != 75 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "skipped gate g: paused by command") {
			t.Fatalf("%s: paused gate: %d %q %q", h.dir, r.code, r.stdout, r.stderr)
		}
		st := h.status("g")
		p, _ := st["pause"].(map[string]any)
		if st["state"] != "paused" || p["by"] != "command" || p["reason"] != "quota exhausted" {
			t.Fatalf("%s: status %v", h.dir, st)
		}
	}
	// The pause is in the cluster, not in a's pauses.json.
	if _, err := os.Stat(filepath.Join(a.dir, "state", "pauses.json")); err == nil {
		data, _ := os.ReadFile(filepath.Join(a.dir, "state", "pauses.json"))
		if strings.Contains(string(data), `"g"`) {
			t.Fatalf("the shared pause was written locally: %s", data)
		}
	}
	if r := b.cg("-v", "resume", "g"); r.code != 0 || !strings.Contains(r.stderr+r.stdout, "lifted its shared pause") {
		t.Fatalf("resume on b: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := a.cg("g", "--", "true"); r.code != 0 {
		t.Fatalf("a after resume on b: %d %s", r.code, r.stderr)
	}
	if st := a.status("g"); st["state"] != "ok" || st["resumed_at"] == nil {
		t.Fatalf("a's status after the resume: %v", st)
	}

	// A pause with an expiry ends by itself on every host.
	if r := b.cg("pause", "g", "--for", "2s"); r.code != 0 {
		t.Fatalf("pause --for: %d %s", r.code, r.stderr)
	}
	if r := a.cg("g", "--", "true"); r.code != 75 {
		t.Fatalf("a during b's 2s pause: %d %s", r.code, r.stderr)
	}
	waitFor(t, 30*time.Second, "the 2s pause to end", func() bool { return a.cg("g", "--", "true").code == 0 })
}

// With the cluster down, a run is skipped with reason coordinator_down
// (fail closed) within the configured timeout; with on_coordinator_down =
// "run" it runs and says so. pause fails with 125.
func TestCronGateCoordinatorDown(t *testing.T) {
	need(t)
	closed := newCGHost(t, "closed", "")
	open := newCGHost(t, "open", "on_coordinator_down = \"run\"")
	// Warm both caches while the cluster is up.
	for _, h := range []*cgHost{closed, open} {
		if r := h.cg("g", "--", "true"); r.code != 0 {
			t.Fatalf("%d %s", r.code, r.stderr)
		}
	}
	cl.Freeze(0, 1, 2)
	defer cl.Thaw(0, 1, 2)
	// Silent, as under cron (stderr is not a terminal); -v says why.
	r := closed.cg("g", "--", "sh", "-c", "echo ran")
	if r.code != 75 || strings.Contains(r.stdout, "ran") || r.stderr != "" {
		t.Fatalf("cluster down, skip: %d %q %q; want 75 and silence", r.code, r.stdout, r.stderr)
	}
	r = closed.cg("-v", "g", "--", "sh", "-c", "echo ran")
	if r.code != 75 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "etcd unavailable") {
		t.Fatalf("cluster down, skip with -v: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The message says why: the members (frozen) take connections and
	// say nothing.
	if !strings.Contains(r.stderr, "accepts connections but sends nothing") {
		t.Errorf("cluster down, skip with -v: the message does not name the cause: %q", r.stderr)
	}
	data, _ := os.ReadFile(filepath.Join(closed.dir, "state", "gates", "g", "journal.jsonl"))
	if !strings.Contains(string(data), `"reason":"coordinator_down"`) {
		t.Fatalf("journal has no coordinator_down skip:\n%s", data)
	}
	r = open.cg("g", "--", "sh", "-c", "echo ran")
	if r.code != 0 || !strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "on_coordinator_down") {
		t.Fatalf("cluster down, run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := closed.cg("pause", "g"); r.code != 125 || !strings.Contains(r.stderr, "may or may not have been set") {
		t.Fatalf("pause with the cluster down: %d %q", r.code, r.stderr)
	}
	cl.Thaw(0, 1, 2)
}
