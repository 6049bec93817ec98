package withlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
)

// A backend made up for the tests of Run's one loop: what the etcd backend
// does through the seam (a lease that can be lost, a fencing token, a
// coordinator that does not answer, busy holders found with the answer),
// without a cluster. Named "etcd" so that Run speaks as withlock-etcd.

type fakeDriver struct {
	name    string
	conn    *fakeConn
	openErr error
}

func (d fakeDriver) Name() string             { return d.name }
func (d fakeDriver) Configure(*Options) error { return nil }
func (d fakeDriver) Open(*Options) (Conn, error) {
	if d.openErr != nil {
		return nil, d.openErr
	}
	return d.conn, nil
}

type fakeConn struct {
	held   *fakeHeld // what TryAcquire grants, unless err
	err    error     // what TryAcquire returns
	env    []string
	closed bool
}

func (c *fakeConn) Open(lockset.Request) (lockset.Claim, error) { return c, nil }
func (c *fakeConn) TryAcquire() (lockset.Held, error) {
	if c.err != nil {
		return nil, c.err
	}
	return c.held, nil
}
func (c *fakeConn) WaitChange(ctx context.Context, poll time.Duration) error { return ctx.Err() }
func (c *fakeConn) Hint(error) string                                        { return "fake hint" }
func (c *fakeConn) Notes() []string                                          { return []string{"fake note"} }
func (c *fakeConn) Holding(lockset.Held) string                              { return "fake set" }
func (c *fakeConn) Env(lockset.Held) []string                                { return c.env }
func (c *fakeConn) Close()                                                   { c.closed = true }

type fakeHeld struct {
	lost       chan struct{}
	reason     string
	killBy     time.Time
	releaseErr error
	mu         sync.Mutex
	released   bool
}

func (h *fakeHeld) Paths() []string       { return []string{"/srv/a"} }
func (h *fakeHeld) Slots() []int          { return []int{2} }
func (h *fakeHeld) Files() []*os.File     { return nil }
func (h *fakeHeld) Lost() <-chan struct{} { return h.lost }
func (h *fakeHeld) KillBy() time.Time     { return h.killBy }
func (h *fakeHeld) LostReason() string    { return h.reason }
func (h *fakeHeld) TTL() time.Duration    { return 7 * time.Second }
func (h *fakeHeld) ReleaseErr() error     { return h.releaseErr }
func (h *fakeHeld) Release()              { h.mu.Lock(); h.released = true; h.mu.Unlock() }
func (h *fakeHeld) wasReleased() bool     { h.mu.Lock(); defer h.mu.Unlock(); return h.released }
func (h *fakeHeld) loseLease(why string)  { h.reason = why; close(h.lost) }
func newLeased() *fakeHeld {
	return &fakeHeld{lost: make(chan struct{}), killBy: time.Now().Add(time.Hour)}
}
func newFakeDriver(c *fakeConn) fakeDriver { return fakeDriver{name: "etcd", conn: c} }

type fakeBusy struct{ looked bool }

func (b *fakeBusy) Error() string {
	if b.looked {
		return "/srv/a is busy (held by someone)"
	}
	return "/srv/a is busy"
}
func (b *fakeBusy) FindHolders()  { b.looked = true }
func (b *fakeBusy) Unwrap() error { return lockset.ErrBusy }

// runFake runs Run with d in the background and returns its exit code and
// messages, failing the test if it does not end within a generous bound.
func runFake(t *testing.T, o *Options, d Driver) (int, string) {
	t.Helper()
	var msgs syncBuffer
	done := make(chan int, 1)
	go func() { done <- runWith(o, make(chan os.Signal, 1), d, &msgs) }()
	select {
	case code := <-done:
		return code, msgs.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("Run did not return within 60 s; messages so far:\n%s", msgs.String())
		return 0, ""
	}
}

// syncBuffer is a bytes.Buffer that a running Run may write while a test
// that gave up on it reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func options(command ...string) *Options {
	o := &Options{Command: command}
	o.SkipCode, o.KillAfter, o.LockDir = runner.ExitSkip, 10*time.Second, DefaultLockDir
	o.Paths = []string{"/srv/a"}
	return o
}

// stopWhenDone returns a path that a test's command waits for to end of
// itself, created when the test ends: a command that was not stopped does
// not outlive a failed test.
func stopWhenDone(t *testing.T) string {
	stop := filepath.Join(t.TempDir(), "stop")
	t.Cleanup(func() { _ = os.WriteFile(stop, nil, 0o600) })
	return stop
}

// afterFile runs f once path exists (the command has started), from a
// goroutine of its own. If path does not appear within a generous bound it
// reports an error and does not run f (runFake then fails on its own
// bound: the command runs until stopped).
func afterFile(t *testing.T, path string, f func()) {
	go func() {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				f()
				return
			}
		}
		t.Errorf("%s did not appear within 30 s: the command did not start", path)
	}()
}

// A lease lost while the command runs: TERM to the command, exit 70
// whatever the command exited with, the loss said once.
func TestRunLeaseLostStopsCommand(t *testing.T) {
	dir := t.TempDir()
	started, termed := filepath.Join(dir, "started"), filepath.Join(dir, "termed")
	h := newLeased()
	d := newFakeDriver(&fakeConn{held: h})
	o := options("sh", "-c", `trap 'touch "$2"; exit 0' TERM; touch "$1"; while [ ! -e "$3" ]; do sleep 0.05; done`, "sh", started, termed, stopWhenDone(t))
	afterFile(t, started, func() { h.loseLease("renewals stopped") })
	code, msgs := runFake(t, o, d)
	if code != runner.ExitLost {
		t.Errorf("exit %d, want %d (lease lost); messages:\n%s", code, runner.ExitLost, msgs)
	}
	if _, err := os.Stat(termed); err != nil {
		t.Errorf("the command did not get TERM: %v", err)
	}
	if !strings.Contains(msgs, "withlock-etcd: lost the etcd lease: renewals stopped; stopping sh -c") || !strings.Contains(msgs, "(TERM now, KILL in ") {
		t.Errorf("messages do not say the lease was lost:\n%s", msgs)
	}
	if !h.wasReleased() {
		t.Error("the locks were not released")
	}
}

// A command that ignores TERM is killed at the lease's KillBy, before
// --kill-after when that comes first.
func TestRunLeaseLostKillsByKillBy(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	h := newLeased()
	d := newFakeDriver(&fakeConn{held: h})
	o := options("sh", "-c", `trap '' TERM; touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", started, stopWhenDone(t))
	o.KillAfter = time.Hour
	afterFile(t, started, func() {
		h.killBy = time.Now().Add(200 * time.Millisecond)
		h.loseLease("gone")
	})
	if code, msgs := runFake(t, o, d); code != runner.ExitLost {
		t.Errorf("exit %d, want %d; messages:\n%s", code, runner.ExitLost, msgs)
	}
}

// A lease lost before the command starts: the command never runs, and the
// run ends as for a coordinator that does not answer (125, or the skip
// code under --on-coordinator-down skip).
func TestRunLeaseLostBeforeStart(t *testing.T) {
	for _, c := range []struct {
		down string
		code int
		msg  string
	}{
		{"fail", runner.ExitFailure, "withlock-etcd: etcd unavailable\nwithlock-etcd: hint: the command did not run"},
		{"skip", runner.ExitSkip, "withlock-etcd: skipped touch"},
	} {
		ran := filepath.Join(t.TempDir(), "ran")
		h := newLeased()
		h.loseLease("expired")
		o := options("touch", ran)
		o.OnCoordinatorDown, o.Verbose = c.down, true // -v: the skip is said on a pipe too
		code, msgs := runFake(t, o, newFakeDriver(&fakeConn{held: h}))
		if code != c.code || !strings.Contains(msgs, "lost the etcd lease before starting touch") || !strings.Contains(msgs, c.msg) {
			t.Errorf("--on-coordinator-down %s: exit %d, want %d; messages:\n%s", c.down, code, c.code, msgs)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("--on-coordinator-down %s: the command ran", c.down)
		}
	}
}

// A coordinator that does not answer (lockset.ErrUnavailable, whatever the
// backend): 125 with a hint, or the skip code under --on-coordinator-down
// skip; the command never runs. The same from Open.
func TestRunUnavailable(t *testing.T) {
	down := fmt.Errorf("etcd unavailable: grant lease: no answer: %w", lockset.ErrUnavailable)
	for _, open := range []bool{false, true} {
		for _, c := range []struct {
			down string
			code int
		}{{"", runner.ExitFailure}, {"skip", 9}} {
			ran := filepath.Join(t.TempDir(), "ran")
			o := options("touch", ran)
			o.OnCoordinatorDown, o.SkipCode = c.down, 9
			d := newFakeDriver(&fakeConn{err: down})
			if open {
				d.openErr = down
			}
			code, msgs := runFake(t, o, d)
			if code != c.code {
				t.Errorf("open error %v, --on-coordinator-down %q: exit %d, want %d; messages:\n%s", open, c.down, code, c.code, msgs)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("open error %v, --on-coordinator-down %q: the command ran", open, c.down)
			}
		}
	}
}

// Busy, whatever the backend (lockset.BusyError): the skip code, the
// holders looked up only for a message that is shown — with -v here,
// where the messages go to a buffer, not a terminal (safetext.Printer); never
// with -q.
func TestRunBusy(t *testing.T) {
	for _, c := range []struct{ quiet, verbose, said bool }{
		{false, true, true}, {false, false, false}, {true, true, false}, {true, false, false},
	} {
		be := &fakeBusy{}
		o := options("true")
		o.Quiet, o.Verbose = c.quiet, c.verbose
		code, msgs := runFake(t, o, newFakeDriver(&fakeConn{err: fmt.Errorf("try: %w", be)}))
		if code != runner.ExitSkip || be.looked != c.said {
			t.Errorf("%+v: exit %d, holders looked up %v; messages:\n%s", c, code, be.looked, msgs)
		}
		want := ""
		if c.said {
			// -v also says the backend's notes (Infof).
			want = "withlock-etcd: fake note\nwithlock-etcd: skipped true: /srv/a is busy (held by someone)\n"
		}
		if msgs != want {
			t.Errorf("%+v: messages %q, want %q", c, msgs, want)
		}
	}
}

// Any other failure: 125, with the backend's hint.
func TestRunFailureHint(t *testing.T) {
	code, msgs := runFake(t, options("true"), newFakeDriver(&fakeConn{err: errors.New("refused")}))
	if code != runner.ExitFailure || msgs != "withlock-etcd: refused\nwithlock-etcd: hint: fake hint\n" {
		t.Errorf("exit %d; messages %q", code, msgs)
	}
}

// The command gets WITHLOCK_PATHS, WITHLOCK_SLOT and the backend's own
// entries (Conn.Env, the fencing token), and its exit code; -v says the
// backend's notes and what is held; a release that failed is a warning
// naming the lease's TTL.
func TestRunEnvAndRelease(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	h := newLeased()
	h.releaseErr = errors.New("no answer")
	c := &fakeConn{held: h, env: []string{"WITHLOCK_FENCE_REVISION=42"}}
	o := options("sh", "-c", `echo "$WITHLOCK_PATHS $WITHLOCK_SLOT $WITHLOCK_FENCE_REVISION" > "$1"; exit 7`, "sh", out)
	o.Verbose = true
	code, msgs := runFake(t, o, newFakeDriver(c))
	if code != 7 {
		t.Errorf("exit %d, want the command's 7; messages:\n%s", code, msgs)
	}
	if got, _ := os.ReadFile(out); string(got) != `["/srv/a"] 2 42`+"\n" {
		t.Errorf("the command saw %q", got)
	}
	for _, want := range []string{
		"withlock-etcd: fake note\n",
		"withlock-etcd: holding fake set\n",
		"withlock-etcd: warning: could not release the locks (no answer); they expire with the lease, within 7s\n",
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages lack %q:\n%s", want, msgs)
		}
	}
	if !h.wasReleased() || !c.closed {
		t.Errorf("released %v, connection closed %v", h.wasReleased(), c.closed)
	}
}
