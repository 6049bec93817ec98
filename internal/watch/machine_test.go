package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The alert state machine, one test per rule of docs/watchdog.md's "Alerts",
// driven by an injected clock and a recording notifier: nothing sleeps.

const oneGate = `
[gates.job]
interval = "30m"
`

// healthy sets up a gate that has just succeeded and makes the first
// (baseline) check, which finds nothing bad.
func healthy(t *testing.T, body string) *env {
	e := newEnv(t, body)
	e.success("job")
	res := e.expect()
	if !res.FirstRun {
		t.Fatal("first check is not a first run")
	}
	return e
}

func TestAlertAfterTwoBadChecksOnce(t *testing.T) {
	e := healthy(t, oneGate)
	e.clock.Advance(time.Minute)
	e.failure("job", 3)
	e.expect() // 1st bad check: not yet
	if c := e.cond("job", CondFailed); c == nil || c.Count != 1 || !c.Bad || len(c.Alerted) != 0 {
		t.Fatalf("after one bad check: %+v", c)
	}
	e.clock.Advance(5 * time.Minute)
	e.expect("alert job/failed") // 2nd: alert
	for i := 0; i < 5; i++ {
		e.clock.Advance(5 * time.Minute)
		e.failure("job", 3) // failing again and again: still the same condition
		e.expect()          // ...alerted once
	}
	if c := e.cond("job", CondFailed); c == nil || c.Count != 7 || len(c.Alerted) != 1 || !c.AlertedAt.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("condition: %+v", c)
	}
}

func TestAlertAfterConfigurable(t *testing.T) {
	e := healthy(t, "[check]\nalert_after = 3\n"+oneGate)
	e.failure("job", 1)
	e.expect()
	e.expect()
	e.expect("alert job/failed")
	e = healthy(t, "[check]\nalert_after = 1\n"+oneGate)
	e.failure("job", 1)
	e.expect("alert job/failed")
}

func TestRecoveryOnce(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	e.expect("alert job/failed")
	e.clock.Advance(30 * time.Minute)
	e.success("job")
	e.expect("recovery job/failed")
	if c := e.cond("job", CondFailed); c != nil {
		t.Fatalf("recovered condition kept: %+v", c)
	}
	e.expect()
}

func TestBadOnceClearsSilently(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	e.success("job")
	e.expect() // never alerted: no recovery either
	if c := e.cond("job", CondFailed); c != nil {
		t.Fatalf("condition kept: %+v", c)
	}
}

func TestFailedAlertIsRetried(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	e.rec.fail = 1
	res := e.expect() // the alert fails: not alerted
	if !res.NotifyFailed() || len(res.Notifications) != 1 || res.Notifications[0].Errors["rec"] == "" {
		t.Fatalf("failed delivery not reported: %+v", res.Notifications)
	}
	if c := e.cond("job", CondFailed); c == nil || len(c.Alerted) != 0 {
		t.Fatalf("condition after a failed alert: %+v", c)
	}
	e.expect("alert job/failed") // the next check tries again
	e.expect()                   // and then never again
}

func TestFailedRecoveryKeepsCondition(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	e.expect("alert job/failed")
	e.success("job")
	e.rec.fail = 1
	res := e.expect() // the recovery fails: the condition stays
	if !res.NotifyFailed() {
		t.Fatal("failed recovery not reported")
	}
	if c := e.cond("job", CondFailed); c == nil || c.Bad || len(c.Alerted) != 1 {
		t.Fatalf("condition after a failed recovery: %+v", c)
	}
	e.expect("recovery job/failed") // tried again
	e.expect()
	if c := e.cond("job", CondFailed); c != nil {
		t.Fatalf("condition kept after its recovery: %+v", c)
	}
}

func TestBadAgainWhileRecoveryPending(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	e.expect("alert job/failed")
	e.success("job")
	e.rec.fail = 1
	e.expect() // recovery failed: nobody heard "recovered"
	e.failure("job", 2)
	e.expect() // bad again: still alerted, no second alert
	e.success("job")
	e.expect("recovery job/failed")
}

func TestFirstRunBaselineMuted(t *testing.T) {
	e := newEnv(t, oneGate)
	e.failure("job", 1)
	e.clock.Advance(time.Hour) // it failed well before the first check
	res := e.expect()          // first run: bad already, muted
	if !res.FirstRun || res.Conditions[0].Condition != CondFailed || !res.Conditions[0].Muted {
		t.Fatalf("first run: %+v", res.Conditions)
	}
	for i := 0; i < 4; i++ {
		e.failure("job", 1)
		e.expect() // muted: never alerts while it stays bad
	}
	e.success("job")
	e.expect() // cleared: forgotten without a recovery
	if c := e.cond("job", CondFailed); c != nil {
		t.Fatalf("muted condition kept: %+v", c)
	}
	e.failure("job", 1)
	e.expect()
	e.expect("alert job/failed") // bad again: alerts normally
}

func TestGateLeavingForgetsSilently(t *testing.T) {
	e := healthy(t, oneGate)
	e.clock.Advance(2 * time.Hour) // stale
	e.expect()
	e.expect("alert job/stale")
	e.setConfig("") // undeclared, but it has records: still failed-watched, no longer stale-watched
	e.expect()
	if c := e.cond("job", CondStale); c != nil {
		t.Fatalf("unwatched condition kept: %+v", c)
	}
}

// Two checks at once never alert twice: the state lock is held from
// reading the state to writing it, notifications included.
func TestConcurrentChecksAlertOnce(t *testing.T) {
	e := healthy(t, "[check]\nalert_after = 1\n"+oneGate)
	e.failure("job", 1)
	lockPath := filepath.Join(e.dir, LockFile)
	var mu sync.Mutex
	var heldDuring []bool
	e.rec.during = func() {
		// Another open file description cannot take the lock while a
		// notifier runs.
		f, err := os.Open(lockPath)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		mu.Lock()
		heldDuring = append(heldDuring, errors.Is(err, unix.EWOULDBLOCK))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.checker().Run(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := e.rec.take(); len(got) != 1 {
		t.Fatalf("8 concurrent checks sent %q, want one alert", got)
	}
	if len(heldDuring) != 1 || !heldDuring[0] {
		t.Fatalf("state lock held during the notifier: %v", heldDuring)
	}
}

// Several notifiers: each gets the alert once; one that failed is retried
// alone; the recovery goes to those that had the alert.
func TestSeveralNotifiers(t *testing.T) {
	e := healthy(t, oneGate)
	other := &recorder{id: "other"}
	e.notes = []Notifier{e.rec, other}
	e.failure("job", 1)
	e.expect()
	other.fail = 1
	e.expect("alert job/failed")
	if got := other.take(); len(got) != 0 {
		t.Fatalf("other got %q", got)
	}
	e.expect() // rec is not told again...
	if got := other.take(); len(got) != 1 {
		t.Fatalf("other got %q on the retry, want the alert", got)
	}
	e.success("job")
	e.expect("recovery job/failed")
	if got := other.take(); len(got) != 1 {
		t.Fatalf("other got %q, want the recovery", got)
	}
}

// A notifier that hangs (ignoring its context) is abandoned after its
// budget, and not tried again in the same check.
func TestHangingNotifierBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("waits one 2 s notifier budget")
	}
	e := healthy(t, "[check]\nalert_after = 1\n"+oneGate+"[gates.job2]\ninterval = \"30m\"\n")
	e.rec.hang = true
	e.failure("job", 1)
	e.failure("job2", 1)
	start := time.Now()
	res, _ := e.check()
	// a hang-catcher: the notifier would hang forever
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("check took %v with a hanging notifier", d)
	}
	if len(res.Notifications) != 2 || res.Notifications[1].Errors["rec"] == "" {
		t.Fatalf("notifications: %+v", res.Notifications)
	}
	if got := res.Notifications[1].Errors["rec"]; got[:9] != "not tried" {
		t.Fatalf("second message to a dead notifier: %q", got)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	e := healthy(t, oneGate)
	e.failure("job", 1)
	e.expect()
	before, _ := os.ReadFile(filepath.Join(e.dir, StateFile))
	c := e.checker()
	c.DryRun = true
	res, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notifications) != 1 || res.Notifications[0].Kind != KindAlert || len(res.Notifications[0].Delivered) != 0 {
		t.Fatalf("dry run notifications: %+v", res.Notifications)
	}
	if got := e.rec.take(); len(got) != 0 {
		t.Fatalf("dry run sent %q", got)
	}
	after, _ := os.ReadFile(filepath.Join(e.dir, StateFile))
	if string(before) != string(after) {
		t.Fatal("dry run changed the state")
	}
	e.expect("alert job/failed") // the real check still alerts
}

func TestDryRunWithoutStateWritesNothing(t *testing.T) {
	e := newEnv(t, oneGate)
	c := e.checker()
	c.DryRun = true
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(e.dir); len(ents) != 0 {
		t.Fatalf("dry run wrote %v", ents)
	}
}

func TestCorruptStateIsAnError(t *testing.T) {
	e := newEnv(t, oneGate)
	e.write(StateFile, "{not json")
	if _, err := e.checker().Run(context.Background()); err == nil {
		t.Fatal("corrupt state accepted")
	}
}
