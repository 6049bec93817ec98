//go:build linux

package lockset

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTicketIntersects(t *testing.T) {
	names := map[string]bool{"b.lock": true}
	for _, c := range []struct {
		data string
		want bool
	}{
		{"a.lock\nb.lock\n", true},
		{"b.lock", true},
		{"a.lock\nbb.lock\n", false},
		{"", false},
		{"\n\n", false},
		{"xb.lock\n", false},
	} {
		if got := ticketIntersects([]byte(c.data), names); got != c.want {
			t.Errorf("ticketIntersects(%q) = %v, want %v", c.data, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"t-00000000000000000012-4242", 4242, true},
		{"t-x", 0, false},
		{"t-1-", 0, false},
		{"t-1--0", 0, false},
		{"nodash", 0, false},
	} {
		if pid, ok := ticketPID(c.name); pid != c.pid || ok != c.ok {
			t.Errorf("ticketPID(%q) = %d, %v; want %d, %v", c.name, pid, ok, c.pid, c.ok)
		}
	}
}

// FuzzTicket holds the ticket reader (a ticket is outside input: any user
// who can write the queue dir can plant one) to a plain reference: a line
// equal to one of our (non-empty) names intersects, nothing else does;
// no name panics the PID reader or gives a PID below 1; a pool is
// reserved once per line naming it.
func FuzzTicket(f *testing.F) {
	f.Add([]byte("a.lock\nb.lock\n"), "b.lock", "t-01-7")
	f.Add([]byte("\x00\n\n"), "", "t--")
	f.Add([]byte("a.lock\nslots:1:2 +\nslots:1:2 -\nslots:1:2 +\n"), "1:2", "t-01-7")
	f.Fuzz(func(t *testing.T, data []byte, name, ticket string) {
		if name == "" {
			return // lock file names are never empty
		}
		want := false
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if string(l) == name {
				want = true
			}
		}
		if got := ticketIntersects(data, map[string]bool{name: true}); got != want {
			t.Fatalf("ticketIntersects(%q, %q) = %v, want %v", data, name, got, want)
		}
		// A pool reserves one slot per line naming it with the flag
		// "+"; a pool line is never a lock name.
		pool, reserved := poolLine+name, 0
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if string(l) == pool+" +" {
				reserved++
			}
		}
		w := (&queue{keepPools: map[string]bool{pool: true}}).parse("t-1-1", data, true)
		if w.pools[pool] != reserved {
			t.Fatalf("parse(%q) reserves %d slots of %q, want %d", data, w.pools[pool], pool, reserved)
		}
		if len(w.pools) > 1 {
			t.Fatalf("parse(%q) counts pools %v, want only %q (the reader's own)", data, w.pools, pool)
		}
		// A reader that keeps only its own names stores no other.
		kept := (&queue{keep: map[string]bool{name: true}, keepPools: map[string]bool{}}).parse("t-1-1", data, true)
		if len(kept.names) > 1 || (len(kept.names) == 1 && !kept.names[name]) || kept.names[name] != want {
			t.Fatalf("parse(%q) keeping %q stores %v", data, name, kept.names)
		}
		for n := range w.names {
			if strings.HasPrefix(n, poolLine) {
				t.Fatalf("parse(%q) reads pool line %q as a lock name", data, n)
			}
		}
		if pid, ok := ticketPID(ticket); ok && pid <= 0 {
			t.Fatalf("ticketPID(%q) = %d, ok", ticket, pid)
		}
	})
}

// countClaim counts a claim's attempts.
type countClaim struct {
	Claim
	n atomic.Int64
}

func (c *countClaim) TryAcquire() (Held, error) {
	c.n.Add(1)
	return c.Claim.TryAcquire()
}

// A queued waiter sleeps until something it waits for changes: reading the
// queue (every withlock does, before each attempt) must not wake it. Before
// the watch was limited to tickets' write-closes and removals, the waiter
// woke on its own reads of the queue dir and spun, retrying without pause.
// The bound allows one attempt per Poll interval that passed (the fallback
// wake-up) plus two, however slow the machine.
func TestQueuedWaiterSleeps(t *testing.T) {
	dir := t.TempDir()
	lockDir := filepath.Join(dir, "locks")
	b := Local{LockDir: lockDir}
	target := filepath.Join(dir, "a")
	// Another holder of a's lock: an open file description of our own.
	hold, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.TryAcquire(); err != nil {
		t.Fatal(err)
	}
	c, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	cc := &countClaim{Claim: c}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(ctx, cc, time.Hour)
		done <- err
	}()
	// Wait (bounded) until the waiter has its ticket.
	deadline := time.Now().Add(time.Minute)
	for {
		if ents, _ := os.ReadDir(filepath.Join(lockDir, QueueDir)); len(ents) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter took no ticket within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start, before := time.Now(), cc.n.Load()
	// Newcomers read the queue, and the waiter's ticket, 200 times and for
	// at least 100 ms (so that a spinning waiter, which must be scheduled
	// to show, has the time to).
	other, err := b.Open(Request{Paths: []string{target}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200 || time.Since(start) < 100*time.Millisecond; i++ {
		if _, err := other.TryAcquire(); err == nil {
			t.Fatal("a newcomer took a's lock while it was held")
		}
	}
	other.Close()
	attempts := cc.n.Load() - before
	if max := 2 + int64(time.Since(start)/Poll); attempts > max {
		t.Errorf("the waiter made %d attempts while the queue was read for %v; want at most %d (it must sleep)", attempts, time.Since(start), max)
	}
	cancel()
	<-done
	c.Close()
	hold.Close()
}

// Two --first-of waiters whose sets are all busy sleep until a set is
// released. Before, every attempt closed the files it had tried, each
// close woke every first-of waiter watching the lock dir, itself
// included, and two waiters (or one) retried without pause. The bound is
// the one of TestQueuedWaiterSleeps; then the release of b wakes one of
// them, which takes set 1.
func TestFirstOfWaitersSleep(t *testing.T) {
	dir := t.TempDir()
	lockDir := filepath.Join(dir, "locks")
	b := Local{LockDir: lockDir}
	a, bb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	holdA, err := b.Open(Request{Paths: []string{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer holdA.Close()
	holdB, err := b.Open(Request{Paths: []string{bb}})
	if err != nil {
		t.Fatal(err)
	}
	defer holdB.Close()
	for _, h := range []Claim{holdA, holdB} {
		if _, err := h.TryAcquire(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		c   FirstOfClaim
		h   Held
		err error
	}
	done := make(chan result, 2)
	var counted []*countClaim
	for range 2 {
		c, err := b.OpenFirstOf(nil, [][]string{{a}, {bb}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cc := &countClaim{Claim: c}
		counted = append(counted, cc)
		go func() {
			h, err := Acquire(ctx, cc, time.Hour)
			done <- result{c, h, err}
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if ents, _ := os.ReadDir(filepath.Join(lockDir, QueueDir)); len(ents) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the two waiters took no tickets within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	before := []int64{counted[0].n.Load(), counted[1].n.Load()}
	time.Sleep(600 * time.Millisecond) // a window for a spinning waiter to show, not a wait for anything
	for i, cc := range counted {
		attempts := cc.n.Load() - before[i]
		if max := 2 + int64(time.Since(start)/Poll); attempts > max {
			t.Errorf("first-of waiter %d made %d attempts in %v with every set busy; want at most %d (it must sleep)", i, attempts, time.Since(start), max)
		}
	}
	holdB.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("a waiter after b's release: %v", r.err)
	}
	if r.c.Candidate() != 1 {
		t.Errorf("the waiter woken by b's release took set %d; want 1", r.c.Candidate())
	}
	r.h.Release()
	cancel()
	<-done
}
