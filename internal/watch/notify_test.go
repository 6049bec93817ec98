package watch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
)

var testMsg = Message{V: 1, Kind: KindAlert, Gate: "translate", Condition: CondFailed,
	Title: "cron-gate: translate failed", Body: "the last run ended: failure, exit 3\nHost: pi",
	Detail: "the last run ended: failure, exit 3", Since: t0, Time: t0.Add(5 * time.Minute), Host: "pi"}

func TestCommandNotifierArgsAndEnv(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	sc := script(t, dir, "notify", `for a in "$@"; do printf '%s\n--\n' "$a"; done > `+out+`
env | grep '^CRON_GATE_ALERT_' | sort >> `+out+"\n")
	n := &CommandNotifier{Argv: []string{sc, "-g", "blog"}}
	if err := n.Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	for _, want := range []string{
		"-g\n--\nblog\n--\ncron-gate: translate failed\n--\nthe last run ended: failure, exit 3\nHost: pi\n--\n",
		"CRON_GATE_ALERT_CONDITION=failed\n", "CRON_GATE_ALERT_GATE=translate\n", "CRON_GATE_ALERT_KIND=alert\n",
		"CRON_GATE_ALERT_TITLE=cron-gate: translate failed\n", "CRON_GATE_ALERT_SINCE=2026-11-29T09:00:00Z\n",
		"CRON_GATE_ALERT_HOST=pi\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	// Placeholders replace the appended title and body.
	n = &CommandNotifier{Argv: []string{sc, "[{gate}] {title}", "{kind}/{condition}"}}
	if err := n.Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(out)
	if !strings.HasPrefix(string(got), "[translate] cron-gate: translate failed\n--\nalert/failed\n--\nCRON_GATE") {
		t.Errorf("templated: %q", got)
	}
	if n.ID() == (&CommandNotifier{Argv: []string{sc}}).ID() || (&CommandNotifier{Name: "bark"}).ID() != "bark" {
		t.Error("IDs")
	}
}

func TestCommandNotifierFailure(t *testing.T) {
	dir := t.TempDir()
	n := &CommandNotifier{Argv: []string{script(t, dir, "fail", "echo 'bark: no network' >&2; exit 2\n")}}
	err := n.Notify(context.Background(), testMsg)
	if err == nil || !strings.Contains(err.Error(), "exit status 2: bark: no network") {
		t.Fatalf("got %v", err)
	}
}

// A hanging command is killed with its whole process group after the
// timeout; the notifier returns at once then.
func TestCommandNotifierTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	n := &CommandNotifier{Timeout: 300 * time.Millisecond,
		Argv: []string{script(t, dir, "hang", "sleep 60 & echo $! > "+pidfile+"; sleep 60\n")}}
	start := time.Now()
	err := n.Notify(context.Background(), testMsg)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms; its process group was killed") {
		t.Fatalf("got %v", err)
	}
	// a hang-catcher: the command sleeps 60 s
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v", d)
	}
	data, _ := os.ReadFile(pidfile)
	waitGone(t, strings.TrimSpace(string(data)))
}

func TestCommandNotifierRetries(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	// Fails the first time, succeeds the second.
	sc := script(t, dir, "flaky", `echo x >> `+count+`; [ $(wc -l < `+count+`) -ge 2 ]`+"\n")
	n := &CommandNotifier{Argv: []string{sc}, Retries: 1}
	if err := n.Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
}

type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []Message
	ctypes []string
	calls  atomic.Int32
	done   chan struct{}
}

// newHook answers with the statuses in order (then 200); -1 hangs until
// the client gives up.
func newHook(t *testing.T, statuses ...int) *hookServer {
	h := &hookServer{done: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(h.calls.Add(1))
		status := 200
		if n <= len(statuses) {
			status = statuses[n-1]
		}
		data, _ := io.ReadAll(r.Body) // (then the server sees the client go away)
		if status == -1 {
			select {
			case <-r.Context().Done():
			case <-h.done:
			}
			return
		}
		var m Message
		if err := json.Unmarshal(data, &m); err != nil || r.Method != "POST" {
			t.Errorf("webhook got %s %q", r.Method, data)
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.ctypes = append(h.ctypes, r.Header.Get("Content-Type"))
		h.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "answer\n")
	}))
	t.Cleanup(func() {
		close(h.done)
		h.Close()
	})
	return h
}

func TestWebhookNotifier(t *testing.T) {
	h := newHook(t)
	n := &WebhookNotifier{URL: h.URL + "/hook?token=x", Timeout: time.Second}
	if err := n.Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
	if len(h.bodies) != 1 || h.ctypes[0] != "application/json" {
		t.Fatalf("got %+v %q", h.bodies, h.ctypes)
	}
	got := h.bodies[0]
	if got.V != 1 || got.Kind != "alert" || got.Gate != "translate" || got.Condition != "failed" || got.Title != testMsg.Title ||
		got.Body != testMsg.Body || !got.Since.Equal(t0) || got.Host != "pi" {
		t.Fatalf("body %+v", got)
	}
}

func TestWebhookRetries(t *testing.T) {
	h := newHook(t, 503, 429)
	n := &WebhookNotifier{URL: h.URL, Timeout: time.Second, Retries: 2}
	if err := n.Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
	if h.calls.Load() != 3 {
		t.Fatalf("%d calls", h.calls.Load())
	}
	// Out of retries: the last answer is the error.
	h = newHook(t, 500, 500, 500)
	n = &WebhookNotifier{URL: h.URL, Timeout: time.Second, Retries: 2}
	err := n.Notify(context.Background(), testMsg)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("got %v", err)
	}
	// A 4xx other than 408/429 is final.
	h = newHook(t, 404)
	n = &WebhookNotifier{URL: h.URL, Timeout: time.Second, Retries: 2}
	if err := n.Notify(context.Background(), testMsg); err == nil || h.calls.Load() != 1 {
		t.Fatalf("got %v after %d calls", err, h.calls.Load())
	}
}

// A redirect is not followed: the webhook that moved gets nothing, the
// answer is final (not retried, whatever Retries says), and the error
// says where it pointed, so the operator can fix the URL. The alert stays
// undelivered and is sent again at the next check.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	moved := newHook(t)
	var calls atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, moved.URL+"/new", http.StatusPermanentRedirect)
	}))
	t.Cleanup(s.Close)
	n := &WebhookNotifier{URL: s.URL + "/old?token=x", Timeout: 5 * time.Second, Retries: 2}
	err := n.Notify(context.Background(), testMsg)
	if err == nil || !strings.Contains(err.Error(), "HTTP 308 Permanent Redirect (redirect to "+moved.URL+"/new; redirects are not followed)") ||
		strings.Contains(err.Error(), "token=x") {
		t.Fatalf("got %v", err)
	}
	if calls.Load() != 1 || moved.calls.Load() != 0 {
		t.Fatalf("%d calls, %d to where it pointed", calls.Load(), moved.calls.Load())
	}
}

// A webhook that never answers costs its timeout per attempt, no more.
func TestWebhookTimeout(t *testing.T) {
	h := newHook(t, -1, -1)
	n := &WebhookNotifier{URL: h.URL, Timeout: 200 * time.Millisecond, Retries: 1}
	start := time.Now()
	err := n.Notify(context.Background(), testMsg)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("got %v", err)
	}
	// a hang-catcher: the hook never answers
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v", d)
	}
	if h.calls.Load() != 2 {
		t.Fatalf("%d calls", h.calls.Load())
	}
}

func TestNotifiersFromConfig(t *testing.T) {
	cfg, err := gateconf.Parse("/c.toml", []byte(`
[[notify]]
type = "command"
argv = ["bark", "-g", "blog"]
[[notify]]
type = "webhook"
name = "ops"
url = "https://example.com/hook"
timeout = "3s"
`))
	if err != nil {
		t.Fatal(err)
	}
	ns := Notifiers(cfg, io.Discard)
	c, ok1 := ns[0].(*CommandNotifier)
	w, ok2 := ns[1].(*WebhookNotifier)
	if len(ns) != 2 || !ok1 || !ok2 || c.Timeout != 10*time.Second || c.Retries != 0 || w.Retries != 2 || w.Timeout != 3*time.Second || w.ID() != "ops" {
		t.Fatalf("%+v %+v", ns[0], ns[1])
	}
	if !strings.HasPrefix(c.ID(), "command-") {
		t.Fatalf("id %q", c.ID())
	}
	// No [[notify]]: stderr.
	if ns := Notifiers(gate.DefaultConfig(), io.Discard); len(ns) != 1 || ns[0].ID() != "stderr" {
		t.Fatalf("%+v", ns)
	}
}

func TestStderrNotifier(t *testing.T) {
	var b strings.Builder
	if err := (&StderrNotifier{W: &b}).Notify(context.Background(), testMsg); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "cron-gate: alert: translate failed: the last run ended: failure, exit 3 / Host: pi\n" {
		t.Fatalf("%q", got)
	}
}
