package hcping

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/tui"
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
	code := gate.Run(gate.Invocation{Gate: "hc", Argv: argv, Config: cfg, Observer: New, Out: &tui.Printer{Prog: "cron-gate", W: &errb}})
	return code, errb.String()
}

func TestHealthchecksPings(t *testing.T) {
	s := newHCServer(t)
	base := s.URL + "/ping/uuid"
	for _, tc := range []struct {
		argv []string
		code int
		want []string // paths, in order
	}{
		{[]string{"true"}, 0, []string{"/ping/uuid/start", "/ping/uuid"}},
		{[]string{"sh", "-c", "exit 3"}, 3, []string{"/ping/uuid/start", "/ping/uuid/3"}},
		{[]string{"sh", "-c", "kill -KILL $$"}, 137, []string{"/ping/uuid/start", "/ping/uuid/fail"}},
		{[]string{"sh", "-c", "exit 75"}, 75, []string{"/ping/uuid/start", "/ping/uuid/log"}},
		{[]string{"/nonexistent/cmd"}, 127, []string{"/ping/uuid/127"}},
	} {
		code, stderr := runHC(t, base, tc.argv...)
		got := s.take()
		if code != tc.code || len(got) != len(tc.want) {
			t.Fatalf("%q: exit %d, pings %q, stderr %q", tc.argv, code, got, stderr)
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(got[i], "POST "+w+" cron-gate hc run ") {
				t.Errorf("%q: ping %d is %q, want %s", tc.argv, i, got[i], w)
			}
		}
		if strings.Contains(stderr, "healthchecks") {
			t.Errorf("%q: stderr %q", tc.argv, stderr)
		}
	}
	// A query (e.g. ?create=1 of slug URLs) stays after the added path.
	runHC(t, s.URL+"/ping/key/slug?create=1", "true")
	if got := s.take(); len(got) != 2 || !strings.HasPrefix(got[0], "POST /ping/key/slug/start?create=1 ") {
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
