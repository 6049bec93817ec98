//go:build etcd

package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/etcdpause"
)

// host opens a pause store of its own (its own client, as another host
// would have) on the test's prefix.
func host(t *testing.T, name string, mod ...func(*etcdpause.Config)) *etcdpause.Store {
	t.Helper()
	cfg := etcdpause.Config{Endpoints: cl.Endpoints(), Prefix: prefix(t), Who: "ops@" + name}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := etcdpause.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// raw reads a key with a client of the test's own.
func raw(t *testing.T, key string) *clientv3.GetResponse {
	t.Helper()
	cli, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A pause set on host A is seen on host B, with its reason, who and since;
// B's resume lifts it for A, records the resume, and a second resume finds
// nothing.
func TestPauseSharedAcrossHosts(t *testing.T) {
	need(t)
	ctx := context.Background()
	a, b := host(t, "a"), host(t, "b")
	if p, err := b.Get(ctx, "backup"); err != nil || p != nil {
		t.Fatalf("before any pause: %+v, %v", p, err)
	}
	since := time.Now().Truncate(time.Second)
	if err := a.Set(ctx, "backup", gate.Pause{Reason: "disk swap", Since: since, Who: "ops@a"}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Get(ctx, "backup")
	if err != nil || p == nil {
		t.Fatalf("host B does not see host A's pause: %+v, %v", p, err)
	}
	if p.By != gate.ByCommand || p.Reason != "disk swap" || p.Who != "ops@a" || !p.Since.Equal(since) || !p.Until.IsZero() {
		t.Errorf("host B sees %+v", p)
	}
	if kv := raw(t, etcdpause.PauseKey(prefix(t), "backup")).Kvs[0]; kv.Lease != 0 {
		t.Errorf("a pause without until is under lease %x", kv.Lease)
	}
	m, err := b.List(ctx)
	if err != nil || len(m) != 1 || m["backup"].Reason != "disk swap" {
		t.Errorf("List on B = %v, %v", m, err)
	}
	before := time.Now()
	had, err := b.Clear(ctx, "backup")
	if err != nil || !had {
		t.Fatalf("Clear on B = %v, %v", had, err)
	}
	if p, err := a.Get(ctx, "backup"); err != nil || p != nil {
		t.Errorf("host A still sees %+v, %v after B's resume", p, err)
	}
	r, err := a.ResumedAt(ctx, "backup")
	if err != nil || r.Before(before.Add(-time.Second)) || r.After(time.Now().Add(time.Second)) {
		t.Errorf("ResumedAt on A = %v, %v; want about %v", r, err, before)
	}
	if rs, err := a.Resumes(ctx); err != nil || !rs["backup"].Equal(r) {
		t.Errorf("Resumes = %v, %v", rs, err)
	}
	if had, err := a.Clear(ctx, "backup"); err != nil || had {
		t.Errorf("second Clear = %v, %v; want false", had, err)
	}
	if m, err := b.List(ctx); err != nil || len(m) != 0 {
		t.Errorf("List after resume = %v, %v", m, err)
	}
}

// A pause with a short Until ends by itself: readers stop seeing it at
// Until, and the cluster deletes the key when its lease expires, so that
// even a host whose clock is stuck an hour behind sees it end. The resume
// record gives Until as the resume time.
func TestPauseExpires(t *testing.T) {
	need(t)
	ctx := context.Background()
	a := host(t, "a")
	b := host(t, "b")
	stuck := time.Now().Add(-time.Hour)
	late := host(t, "late", func(c *etcdpause.Config) { c.Now = func() time.Time { return stuck } })
	until := time.Now().Add(2500 * time.Millisecond)
	if err := a.Set(ctx, "report", gate.Pause{Reason: "short", Since: time.Now(), Until: until}); err != nil {
		t.Fatal(err)
	}
	key := etcdpause.PauseKey(prefix(t), "report")
	kv := raw(t, key).Kvs[0]
	if kv.Lease == 0 {
		t.Fatal("a pause with until is not under a lease")
	}
	if p, err := b.Get(ctx, "report"); err != nil || p == nil || !p.Until.Equal(until) {
		t.Fatalf("B: %+v, %v", p, err)
	}
	if p, err := late.Get(ctx, "report"); err != nil || p == nil {
		t.Fatalf("the late host: %+v, %v", p, err)
	}
	waitFor(t, 10*time.Second, "the pause to end for B", func() bool {
		p, err := b.Get(ctx, "report")
		if err != nil {
			t.Fatal(err)
		}
		return p == nil
	})
	if time.Now().Before(until) {
		t.Errorf("the pause ended for B before its until")
	}
	// The lease: TTL 3 s from the grant. Give elections some slack.
	t0 := time.Now()
	waitFor(t, 15*time.Second, "the key to go with its lease", func() bool { return len(raw(t, key).Kvs) == 0 })
	t.Logf("until passed; the key went %v later", time.Since(t0).Round(100*time.Millisecond))
	if p, err := late.Get(ctx, "report"); err != nil || p != nil {
		t.Errorf("the host with a stuck clock still sees %+v, %v after the lease expired", p, err)
	}
	if r, err := b.ResumedAt(ctx, "report"); err != nil || !r.Equal(until) {
		t.Errorf("ResumedAt = %v, %v; want the until %v", r, err, until)
	}
	if had, err := b.Clear(ctx, "report"); err != nil || had {
		t.Errorf("Clear after expiry = %v, %v; want false", had, err)
	}
}

// A lease-bound pause replaced by a pause without expiry: the new one is
// put without the old lease, which is revoked, so it survives the old
// pause's end. Replaced the other way round, the new lease applies.
func TestPauseReplacedOutlivesLease(t *testing.T) {
	need(t)
	ctx := context.Background()
	a, b := host(t, "a"), host(t, "b")
	key := etcdpause.PauseKey(prefix(t), "sync")
	until := time.Now().Add(2 * time.Second)
	if err := a.Set(ctx, "sync", gate.Pause{Reason: "short", Until: until}); err != nil {
		t.Fatal(err)
	}
	old := clientv3.LeaseID(raw(t, key).Kvs[0].Lease)
	cli, _ := cl.Client()
	defer cli.Close()
	// A sentinel: a key under a lease of the old lease's remaining TTL.
	// When the cluster expires it, the old lease would have expired too,
	// had it lived (instead of sleeping for that long).
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	left, err := cli.TimeToLive(tctx, old)
	cancel()
	if err != nil || left.TTL <= 0 {
		t.Fatalf("the old lease %x: %v, %v", old, left, err)
	}
	sentinel := prefix(t) + "/sentinel"
	tctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	g, err := cli.Grant(tctx, left.TTL+1)
	if err == nil {
		_, err = cli.Put(tctx, sentinel, "x", clientv3.WithLease(g.ID))
	}
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx, "sync", gate.Pause{Reason: "until further notice"}); err != nil {
		t.Fatal(err)
	}
	if kv := raw(t, key).Kvs[0]; kv.Lease != 0 {
		t.Errorf("the replacing pause is under lease %x", kv.Lease)
	}
	tctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	ttl, err := cli.TimeToLive(tctx, old)
	cancel()
	if err != nil || ttl.TTL != -1 {
		t.Errorf("the old lease %x: TTL %v, %v; want revoked (-1)", old, ttl, err)
	}
	waitFor(t, 30*time.Second, "the sentinel lease to expire", func() bool { return len(raw(t, sentinel).Kvs) == 0 })
	p, err := a.Get(ctx, "sync")
	if err != nil || p == nil || p.Reason != "until further notice" || !p.Until.IsZero() {
		t.Fatalf("after the old lease's time: %+v, %v", p, err)
	}
	if r, err := a.ResumedAt(ctx, "sync"); err != nil || !r.IsZero() {
		t.Errorf("ResumedAt = %v, %v; the replaced pause never ended", r, err)
	}
	// And back: a pause with an until replaces it and ends by itself.
	until = time.Now().Add(2 * time.Second)
	if err := a.Set(ctx, "sync", gate.Pause{Reason: "short again", Until: until}); err != nil {
		t.Fatal(err)
	}
	if kv := raw(t, key).Kvs[0]; kv.Lease == 0 {
		t.Error("the new pause with until has no lease")
	}
	waitFor(t, 15*time.Second, "the key to go with its lease", func() bool { return len(raw(t, key).Kvs) == 0 })
}

// 20 hosts at once: each pauses its own gate and half of them resume it,
// while all 20 also pause one shared gate. Nothing is lost: exactly the
// unresumed gates are paused, and the shared gate holds one whole pause,
// whose resume record was written by the same call.
func TestPauseConcurrent(t *testing.T) {
	need(t)
	ctx := context.Background()
	const n = 20
	stores := make([]*etcdpause.Store, n)
	for i := range stores {
		stores[i] = host(t, fmt.Sprintf("h%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	start := make(chan struct{})
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			name := fmt.Sprintf("g%d", i)
			who := fmt.Sprintf("ops@h%d", i)
			if err := s.Set(ctx, name, gate.Pause{Reason: name, Who: who}); err != nil {
				errs <- fmt.Errorf("Set %s: %w", name, err)
			}
			if err := s.Set(ctx, "shared", gate.Pause{Reason: "from " + who, Who: who, Until: time.Now().Add(time.Hour)}); err != nil {
				errs <- fmt.Errorf("Set shared from %s: %w", who, err)
			}
			if i%2 == 1 {
				if had, err := s.Clear(ctx, name); err != nil || !had {
					errs <- fmt.Errorf("Clear %s: %v, %v", name, had, err)
				}
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d hosts × 2-3 writes in %v", n, time.Since(t0).Round(time.Millisecond))
	m, err := stores[0].List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("g%d", i)
		p, ok := m[name]
		if want := i%2 == 0; ok != want || ok && p.Reason != name {
			t.Errorf("gate %s: paused %v (%+v), want %v", name, ok, p, want)
		}
	}
	sh, ok := m["shared"]
	if !ok || sh.Reason != "from "+sh.Who {
		t.Fatalf("shared gate: %+v (present %v)", sh, ok)
	}
	rk := etcdpause.ResumeKey(prefix(t), "shared")
	rec := string(raw(t, rk).Kvs[0].Value)
	if !strings.Contains(rec, `"who":"`+sh.Who+`"`) {
		t.Errorf("the shared gate's pause is %s's but its resume record is %s", sh.Who, rec)
	}
	if kv := raw(t, etcdpause.PauseKey(prefix(t), "shared")).Kvs[0]; kv.Lease == 0 {
		t.Error("the shared pause lost its lease")
	}
	if len(m) != n/2+1 {
		t.Errorf("%d pauses listed, want %d: %v", len(m), n/2+1, m)
	}
}

// A value that is not a pause is an error naming the key, for Get; List
// returns the valid pauses and reports the bad ones.
func TestPauseCorruptValue(t *testing.T) {
	need(t)
	ctx := context.Background()
	a := host(t, "a")
	if err := a.Set(ctx, "good", gate.Pause{Reason: "fine"}); err != nil {
		t.Fatal(err)
	}
	cli, _ := cl.Client()
	defer cli.Close()
	bad := etcdpause.PauseKey(prefix(t), "bad")
	for key, v := range map[string]string{bad: "paused!", etcdpause.PauseKey(prefix(t), "../x"): "{}"} {
		if _, err := cli.Put(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.Get(ctx, "bad")
	if !errors.Is(err, etcdpause.ErrCorrupt) || !strings.Contains(err.Error(), bad) {
		t.Errorf("Get of a corrupt value: %v", err)
	}
	m, err := a.List(ctx)
	if !errors.Is(err, etcdpause.ErrCorrupt) || len(m) != 1 || m["good"].Reason != "fine" {
		t.Errorf("List = %v, %v", m, err)
	}
	t.Logf("List error: %v", err)
	// Resume clears a corrupt pause too.
	if had, err := a.Clear(ctx, "bad"); err != nil || !had {
		t.Errorf("Clear of the corrupt pause = %v, %v", had, err)
	}
}

// Members killed with SIGKILL, the leader first, while hosts read and
// write pauses: every call succeeds (within its timeout, retried on
// another member), and the last write is what is read.
func TestPauseMemberKilled(t *testing.T) {
	need(t)
	ctx := context.Background()
	r, w := host(t, "reader"), host(t, "writer")
	if err := w.Set(ctx, "classifier", gate.Pause{Reason: "0"}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reads, writes, readErrs, writeErrs int
	var firstErr error
	note := func(err error, ok, bad *int) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			*bad++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		*ok++
	}
	var slowest time.Duration
	// traffic waits until both the reader and the writer have succeeded
	// n more times (the calls go on in that phase).
	traffic := func(n int, what string) {
		t.Helper()
		mu.Lock()
		r0, w0 := reads, writes
		mu.Unlock()
		waitFor(t, 60*time.Second, fmt.Sprintf("%d more reads and writes %s", n, what), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return reads >= r0+n && writes >= w0+n
		})
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			p, err := r.Get(ctx, "classifier")
			if err == nil && p == nil {
				err = errors.New("read no pause while one was set")
			}
			mu.Lock()
			slowest = max(slowest, time.Since(t0))
			mu.Unlock()
			note(err, &reads, &readErrs)
			time.Sleep(5 * time.Millisecond) // pacing the load, not a wait
		}
	}()
	last := 0
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := w.Set(ctx, "classifier", gate.Pause{Reason: fmt.Sprint(i)})
			if err == nil {
				mu.Lock()
				last = i
				mu.Unlock()
			}
			note(err, &writes, &writeErrs)
			time.Sleep(20 * time.Millisecond) // pacing the load, not a wait
		}
	}()
	traffic(10, "before the kills")
	leader, err := cl.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the leader m%d", leader+1)
	traffic(10, "with the leader dead")
	if err := cl.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitHealthy(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	traffic(10, "with the old leader back")
	other := (leader + 1) % len(cl.Members)
	if err := cl.Kill(other); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed m%d", other+1)
	traffic(10, "with another member dead")
	close(stop)
	wg.Wait()
	t.Logf("%d reads (slowest %v), %d writes; %d and %d failed", reads, slowest.Round(time.Millisecond), writes, readErrs, writeErrs)
	if readErrs+writeErrs > 0 {
		t.Errorf("%d reads and %d writes failed across member kills; first: %v", readErrs, writeErrs, firstErr)
	}
	if p, err := r.Get(ctx, "classifier"); err != nil || p == nil || p.Reason != fmt.Sprint(last) {
		t.Errorf("after the kills: %+v, %v; want the last write %d", p, err, last)
	}
}

// The whole cluster frozen (no answers), then killed (connection refused):
// every call returns ErrUnavailable (bounded: it never hangs), so a cron
// tick is never held. The pauses are on disk: back up, the cluster still has them.
func TestPauseClusterDown(t *testing.T) {
	need(t)
	ctx := context.Background()
	const timeout = 2 * time.Second
	a := host(t, "a", func(c *etcdpause.Config) { c.Timeout = timeout })
	if err := a.Set(ctx, "backup", gate.Pause{Reason: "kept"}); err != nil {
		t.Fatal(err)
	}
	check := func(how string) {
		t.Helper()
		for name, f := range map[string]func() error{
			"Get":   func() error { _, err := a.Get(ctx, "backup"); return err },
			"List":  func() error { _, err := a.List(ctx); return err },
			"Set":   func() error { return a.Set(ctx, "backup", gate.Pause{Reason: "new"}) },
			"Clear": func() error { _, err := a.Clear(ctx, "other"); return err },
		} {
			// Bounded, not timed: a call that has not returned after
			// ten times its timeout hangs.
			t0 := time.Now()
			res := make(chan error, 1)
			go func() { res <- f() }()
			var err error
			select {
			case err = <-res:
			case <-time.After(10 * timeout):
				t.Fatalf("cluster %s: %s has not returned after %v (timeout %v)", how, name, 10*timeout, timeout)
			}
			if !errors.Is(err, etcdpause.ErrUnavailable) {
				t.Errorf("cluster %s: %s = %v; want ErrUnavailable", how, name, err)
			}
			t.Logf("cluster %s: %s failed after %v: %v", how, name, time.Since(t0).Round(time.Millisecond), err)
		}
	}
	cl.Freeze(cl.All()...)
	check("frozen")
	cl.Thaw(cl.All()...)
	for i := range cl.Members {
		if err := cl.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	check("killed")
	need(t) // restarts every member on its data
	// The same client, as a long-lived cron-gate serve keeps it: it
	// dials a member again after its back-off (at most 8 s and a
	// jitter), so its first calls after the restart may still fail.
	t0 := time.Now()
	var p *gate.Pause
	var err error
	waitFor(t, 30*time.Second, "the client to read the pause after the restart", func() bool {
		p, err = a.Get(ctx, "backup")
		return !errors.Is(err, etcdpause.ErrUnavailable)
	})
	t.Logf("the client read again %v after the restart", time.Since(t0).Round(100*time.Millisecond))
	// The Set sent while the cluster was down may have been applied
	// before the freeze took hold: either value is right, none is not.
	if err != nil || p == nil || (p.Reason != "kept" && p.Reason != "new") {
		t.Errorf("after the restart: %+v, %v", p, err)
	}
}

// etcd restarts every lease's countdown when a new leader is elected, so
// a lease-bound key can outlive its Until: readers still stop seeing the
// pause at Until.
func TestPauseUntilBeatsLeaderChange(t *testing.T) {
	need(t)
	ctx := context.Background()
	a := host(t, "a")
	until := time.Now().Add(3 * time.Second)
	if err := a.Set(ctx, "index", gate.Pause{Until: until}); err != nil {
		t.Fatal(err)
	}
	leader, err := cl.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(leader); err != nil {
		t.Fatal(err)
	}
	// The new leader restarts the lease's countdown; a reader stops
	// seeing the pause at until all the same (not before).
	waitFor(t, 30*time.Second, "the pause to end for a reader", func() bool {
		p, err := a.Get(ctx, "index")
		return err == nil && p == nil
	})
	if time.Now().Before(until) {
		t.Errorf("the pause ended before its until")
	}
	key := etcdpause.PauseKey(prefix(t), "index")
	t.Logf("key still there %v after until: %v", time.Since(until).Round(100*time.Millisecond), len(raw(t, key).Kvs) == 1)
	waitFor(t, 15*time.Second, "the key to go with its lease", func() bool { return len(raw(t, key).Kvs) == 0 })
	t.Logf("the key went %v after until", time.Since(until).Round(100*time.Millisecond))
}
