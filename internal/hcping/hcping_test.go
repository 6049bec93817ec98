package hcping

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"
)

// hcServer records the paths pinged; paths in hang never answer.
type hcServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	done  chan struct{}
}

func newHCServer(t *testing.T, hang ...string) *hcServer {
	s := &hcServer{done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.RequestURI()+" "+string(body))
		s.mu.Unlock()
		for _, h := range hang {
			if strings.HasSuffix(r.URL.Path, h) {
				select {
				case <-r.Context().Done():
				case <-s.done:
				}
				return
			}
		}
		io.WriteString(w, "OK")
	}))
	t.Cleanup(func() {
		close(s.done)
		s.Close()
	})
	return s
}

func (s *hcServer) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.paths
	s.paths = nil
	return p
}

func runHC(t *testing.T, url string, argv ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := gate.DefaultConfig()
	cfg.StateDir = dir
	cfg.Gates["hc"] = &gate.GateConfig{Name: "hc", HealthchecksURL: url}
	var errb bytes.Buffer
	code := gate.Run(gate.Invocation{Gate: "hc", Argv: argv, Config: cfg, Observer: New, Out: &safetext.Printer{Prog: "cron-gate", W: &errb}})
	return code, errb.String()
}

var ridRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestHealthchecksPings: the endpoints of healthchecks.io's Pinging API,
// each ping of a run with the same run ID (rid, a canonical UUID), a new
// one per run; a skip after /start (busy, the skip code) is a success
// whose body says it skipped, never /log, which would leave the check
// "started" and turn it red after its grace time.
func TestHealthchecksPings(t *testing.T) {
	s := newHCServer(t)
	base := s.URL + "/ping/uuid"
	rids := map[string]bool{}
	for _, tc := range []struct {
		argv []string
		code int
		want []string // paths, in order
		body string   // a part of the last ping's body
	}{
		{[]string{"true"}, 0, []string{"/ping/uuid/start", "/ping/uuid"}, ": success, exit 0"},
		{[]string{"sh", "-c", "exit 3"}, 3, []string{"/ping/uuid/start", "/ping/uuid/3"}, ": failure, exit 3"},
		{[]string{"sh", "-c", "kill -KILL $$"}, 137, []string{"/ping/uuid/start", "/ping/uuid/fail"}, ": signal, exit 137, SIGKILL"},
		{[]string{"sh", "-c", "exit 75"}, 75, []string{"/ping/uuid/start", "/ping/uuid"}, ": skipped (the command exited with the skip code 75), exit 75, busy"},
		{[]string{"/nonexistent/cmd"}, 127, []string{"/ping/uuid/127"}, ": error, exit 127"},
	} {
		code, stderr := runHC(t, base, tc.argv...)
		got := s.take()
		if code != tc.code || len(got) != len(tc.want) {
			t.Fatalf("%q: exit %d, pings %q, stderr %q", tc.argv, code, got, stderr)
		}
		rid := ""
		for i, w := range tc.want {
			method, rest, _ := strings.Cut(got[i], " ")
			target, body, _ := strings.Cut(rest, " ")
			path, query, _ := strings.Cut(target, "?")
			r := strings.TrimPrefix(query, "rid=")
			if method != "POST" || path != w || !ridRE.MatchString(r) || !strings.HasPrefix(body, "cron-gate hc run ") {
				t.Errorf("%q: ping %d is %q, want POST %s?rid=UUID", tc.argv, i, got[i], w)
			}
			if i > 0 && r != rid {
				t.Errorf("%q: ping %d has rid %s, the run's first %s", tc.argv, i, r, rid)
			}
			rid = r
		}
		if rids[rid] {
			t.Errorf("%q: rid %s again: each run needs its own", tc.argv, rid)
		}
		rids[rid] = true
		if last := got[len(got)-1]; !strings.Contains(last, tc.body) {
			t.Errorf("%q: last ping %q, want its body to say %q", tc.argv, last, tc.body)
		}
		if strings.Contains(stderr, "healthchecks") {
			t.Errorf("%q: stderr %q", tc.argv, stderr)
		}
	}
	// A query (e.g. ?create=1 of slug URLs) stays after the added path,
	// the run ID after it.
	runHC(t, s.URL+"/ping/key/slug?create=1", "true")
	if got := s.take(); len(got) != 2 || !strings.HasPrefix(got[0], "POST /ping/key/slug/start?create=1&rid=") ||
		!strings.HasPrefix(got[1], "POST /ping/key/slug?create=1&rid=") {
		t.Errorf("with a query: %q", got)
	}
}

// A dead ping URL delays the run by at most two ping timeouts, and is a
// warning that does not name the URL (it holds the check's secret).
func TestHealthchecksDeadURL(t *testing.T) {
	old := hcTimeout
	hcTimeout = 300 * time.Millisecond
	defer func() { hcTimeout = old }()
	s := newHCServer(t, "/start", "/secret-uuid")
	start := time.Now()
	code, stderr := runHC(t, s.URL+"/secret-uuid", "true")
	// The bound itself is the timeout in the warnings below; the clock
	// only catches a hang (no timed assertion on a shared machine).
	if d := time.Since(start); d > 30*hcTimeout {
		t.Fatalf("the run took %v with a dead ping URL: it waited for the pings", d)
	}
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stderr, "cron-gate: warning: gate hc: healthchecks ping /start: timed out") ||
		!strings.Contains(stderr, "cron-gate: warning: gate hc: healthchecks ping (success): timed out") ||
		strings.Contains(stderr, "secret-uuid") {
		t.Fatalf("stderr %q", stderr)
	}
	// A refused connection fails at once.
	s.Close()
	start = time.Now()
	_, stderr = runHC(t, s.URL+"/x", "true")
	if d := time.Since(start); d > 30*hcTimeout || !strings.Contains(stderr, "healthchecks ping /start") {
		t.Fatalf("refused: %v, %q", d, stderr)
	}
}

// No healthchecks_url, no ping and no cost.
func TestHealthchecksOff(t *testing.T) {
	if p := New(&gate.GateConfig{Name: "x"}, "r", nil); p != nil {
		t.Fatal("pinger without a URL")
	}
}

// hcGate runs gate hc of cfg (one state dir across calls) at now.
func hcGate(t *testing.T, cfg *gate.Config, now time.Time, argv ...string) int {
	t.Helper()
	var errb bytes.Buffer
	code := gate.Run(gate.Invocation{Gate: "hc", Argv: argv, Config: cfg, Observer: New, Now: func() time.Time { return now },
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb}})
	if strings.Contains(errb.String(), "healthchecks") {
		t.Errorf("stderr %q", errb.String())
	}
	return code
}

func hcConfig(t *testing.T, g *gate.GateConfig) *gate.Config {
	cfg := gate.DefaultConfig()
	cfg.StateDir = t.TempDir()
	g.Name = "hc"
	cfg.Gates["hc"] = g
	return cfg
}

// lastPing is the path and body of the only ping since the last take, or
// of the last one.
func lastPing(t *testing.T, s *hcServer) (path, body string) {
	t.Helper()
	got := s.take()
	if len(got) == 0 {
		t.Fatal("no ping")
	}
	_, rest, _ := strings.Cut(got[len(got)-1], " ")
	target, body, _ := strings.Cut(rest, " ")
	path, _, _ = strings.Cut(target, "?")
	return path, body
}

// Healthchecks agrees with the watchdog (issue 32, item 8): busy skips
// ping success until the gate counts as skipping (blocked for
// skipping_after, the watchdog's skipping condition), then /fail.
func TestHealthchecksBusySkipsFailOnceSkipping(t *testing.T) {
	s := newHCServer(t)
	cfg := hcConfig(t, &gate.GateConfig{HealthchecksURL: s.URL + "/ping/uuid", SkippingAfter: time.Hour})
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i, at := range []time.Duration{0, time.Minute, 2 * time.Minute, 59 * time.Minute} {
		hcGate(t, cfg, t0.Add(at), "sh", "-c", "exit 75")
		if path, body := lastPing(t, s); path != "/ping/uuid" || !strings.Contains(body, ": skipped (") {
			t.Fatalf("skip %d, blocked for %v < skipping_after: %s %q", i+1, at, path, body)
		}
	}
	hcGate(t, cfg, t0.Add(61*time.Minute), "sh", "-c", "exit 75")
	if path, body := lastPing(t, s); path != "/ping/uuid/fail" ||
		!regexp.MustCompile(`; skipping: blocked since 2026-11-29T08:5\d:\d\dZ \(5 skips in a row, skipping_after 1h\); now: the command exited with the skip code`).MatchString(body) {
		t.Fatalf("blocked for skipping_after: %s %q", path, body)
	}
	// A success ends it.
	hcGate(t, cfg, t0.Add(62*time.Minute), "true")
	if path, _ := lastPing(t, s); path != "/ping/uuid" {
		t.Fatalf("success: %s", path)
	}
}

// A legacy lock's skips ping (they did not before: the check went down
// after its grace) success, then /fail naming the holder; a paused skip
// pings success saying paused, as the watchdog stays silent for a pause.
func TestHealthchecksLegacyAndPausedSkips(t *testing.T) {
	s := newHCServer(t)
	lock := filepath.Join(t.TempDir(), "old.lock")
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cfg := hcConfig(t, &gate.GateConfig{HealthchecksURL: s.URL + "/ping/uuid", LegacyLocks: []string{lock}})
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		hcGate(t, cfg, t0.Add(time.Duration(i)*time.Minute), "true")
		if path, body := lastPing(t, s); path != "/ping/uuid" || !strings.Contains(body, "legacy_lock") {
			t.Fatalf("legacy skip %d: %s %q", i+1, path, body)
		}
	}
	hcGate(t, cfg, t0.Add(2*time.Minute), "true") // the third in a row: blocked
	want := fmt.Sprintf("now: legacy lock %s: held by pid %d", lock, os.Getpid())
	if path, body := lastPing(t, s); path != "/ping/uuid/fail" || !strings.Contains(body, want) {
		t.Fatalf("blocked by a legacy lock: %s %q, want %q", path, body, want)
	}
	cfg.Gates["hc"].Paused = true
	hcGate(t, cfg, t0.Add(3*time.Minute), "true")
	if path, body := lastPing(t, s); path != "/ping/uuid" || !strings.Contains(body, "; paused: a deliberate skip, not a failure") {
		t.Fatalf("paused: %s %q", path, body)
	}
}
