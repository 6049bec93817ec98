package gate

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// fakeClaims is a cluster of one period key per gate and period.
type fakeClaims struct {
	keys     map[string]string
	claim    *fakeClaim
	nextLost chan struct{} // the next claim's Lost, if set
}

type fakeClaim struct {
	f        *fakeClaims
	key      string
	lost     chan struct{}
	done     bool
	released bool
}

func (f *fakeClaims) ClaimPeriod(_ context.Context, g, period, holder string, _ time.Duration) (PeriodClaim, string, error) {
	k := g + "/" + period
	if v, ok := f.keys[k]; ok {
		return nil, v, nil
	}
	f.keys[k] = "claimed by " + holder
	lost := f.nextLost
	if lost == nil {
		lost = make(chan struct{})
	}
	f.nextLost = nil
	f.claim = &fakeClaim{f: f, key: k, lost: lost}
	return f.claim, "", nil
}

func (c *fakeClaim) Lost() <-chan struct{} { return c.lost }
func (c *fakeClaim) Done(context.Context, time.Duration) error {
	c.done = true
	c.f.keys[c.key] = "done by me"
	return nil
}
func (c *fakeClaim) Release() {
	if !c.done {
		delete(c.f.keys, c.key)
	}
	c.released = true
}

// The run path with claims across hosts: a period claimed or done
// elsewhere skips (done); a failure releases the claim; a success marks
// it done; a lease lost mid-run stops the command (TERM) and exits 70.
func TestClaimsAcrossHosts(t *testing.T) {
	e := newOnceEnv(t, OnceDay)
	e.cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	f := &fakeClaims{keys: map[string]string{}}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p, _ := PeriodOf(OnceDay, t0, nil)
	run := func(argv ...string) (int, string) {
		var errb bytes.Buffer
		code := Run(Invocation{Gate: "g", Argv: argv, Config: e.cfg, Pauses: Pauses{Claims: f},
			Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: make(chan os.Signal),
			Now: func() time.Time { return t0 }})
		return code, errb.String()
	}
	f.keys["g/"+p.Key()] = "claimed by run X on other"
	if code, out := run("true"); code != DefaultSkipCode || !strings.Contains(out, "is claimed by run X on other") {
		t.Fatalf("claimed elsewhere: exit %d: %s", code, out)
	}
	delete(f.keys, "g/"+p.Key())
	if code, _ := run("false"); code != 1 || !f.claim.released || len(f.keys) != 0 {
		t.Fatalf("a failure: exit %d, released %v, keys %v", code, f.claim.released, f.keys)
	}
	// Lost mid-run: the command gets TERM; exit 70; the claim released.
	marker := loseOnceStarted(t, f)
	code, out := run("sh", "-c", "touch "+marker+"; trap 'exit 9' TERM; while :; do sleep 0.05; done")
	if code != runner.ExitLost || !strings.Contains(out, "lost") || len(f.keys) != 0 {
		t.Fatalf("lease lost: exit %d, keys %v: %s", code, f.keys, out)
	}
	recs := readJournal(t, e.cfg.StateDir, "g")
	if end := recs[len(recs)-1]; end.Event != journal.EventEnd || !strings.Contains(end.Detail, "etcd lease) was lost") {
		t.Fatalf("end record %+v", end)
	}
	// Lost mid-run, the command ignoring TERM: KILL after --kill-after.
	marker2 := loseOnceStarted(t, f)
	var errb bytes.Buffer
	code = Run(Invocation{Gate: "g", Argv: []string{"sh", "-c", "trap '' TERM; touch " + marker2 + "; while :; do sleep 0.05; done"},
		Config: e.cfg, Pauses: Pauses{Claims: f}, KillAfter: 200 * time.Millisecond,
		Out: &safetext.Printer{Prog: "cron-gate", W: &errb, ReportSkips: true}, Sigs: make(chan os.Signal),
		Now: func() time.Time { return t0 }})
	if code != runner.ExitLost || len(f.keys) != 0 {
		t.Fatalf("lease lost, TERM ignored: exit %d, keys %v: %s", code, f.keys, errb.String())
	}
	recs = readJournal(t, e.cfg.StateDir, "g")
	if end := recs[len(recs)-1]; end.Event != journal.EventEnd || end.Signal != "SIGKILL" {
		t.Fatalf("lease lost, TERM ignored: end record %+v, want the command killed", end)
	}
	// The same with a --kill-after longer than the claim's lease: KILL
	// comes at ClaimKillAfter all the same, before another host could
	// claim the period.
	marker3 := loseOnceStarted(t, f)
	ended := make(chan int, 1)
	go func() {
		ended <- Run(Invocation{Gate: "g", Argv: []string{"sh", "-c", "trap '' TERM; touch " + marker3 + "; while :; do sleep 0.05; done"},
			Config: e.cfg, Pauses: Pauses{Claims: f}, KillAfter: time.Hour,
			Out: &safetext.Printer{Prog: "cron-gate", W: io.Discard, ReportSkips: true}, Sigs: make(chan os.Signal),
			Now: func() time.Time { return t0 }})
	}()
	select {
	case code := <-ended:
		if code != runner.ExitLost {
			t.Fatalf("lease lost, TERM ignored, --kill-after 1h: exit %d", code)
		}
	case <-time.After(ClaimKillAfter + 30*time.Second):
		t.Fatalf("lease lost, TERM ignored, --kill-after 1h: the command still runs %v later; KILL must come within ClaimKillAfter (%v)", ClaimKillAfter+30*time.Second, ClaimKillAfter)
	}
	if code, _ := run("true"); code != 0 || f.keys["g/"+p.Key()] != "done by me" {
		t.Fatalf("a success: exit %d, keys %v", code, f.keys)
	}
}

// loseOnceStarted makes f's next claim lost once the command has started:
// once it has created the file whose name it returns.
func loseOnceStarted(t *testing.T, f *fakeClaims) string {
	marker := filepath.Join(t.TempDir(), "started")
	lost := make(chan struct{})
	f.nextLost = lost
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				close(lost)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return marker
}
