//go:build linux

package etcdlock

import (
	"strings"
	"testing"
)

// TestQueueAhead: a queue key names its set by short ids; a claim yields
// to an earlier key that names one of its paths, not to a later one, not
// to its own, and not to a value that is not a queue value.
func TestQueueAhead(t *testing.T) {
	b := &Backend{cfg: Config{Prefix: "/p"}}
	c := &claim{b: b}
	for _, rel := range []string{"srv/a", "srv/b"} {
		c.keys = append(c.keys, pathKey{key: b.PathKey(rel), rel: rel})
	}
	other := queueValue{Holder: Holder{Host: "h", PID: 7}, Keys: []string{shortID(b.PathKey("srv/b"))}}
	disjoint := queueValue{Keys: []string{shortID(b.PathKey("srv/c"))}}
	q := []*queueKV{{key: "/p/queue/1", rev: 5, v: disjoint}, {key: "/p/queue/2", rev: 9, v: other}, {key: "/p/queue/3", rev: 10, v: other}}
	be := c.ahead(q, 11, nil)
	if be == nil || !be.queued || be.Key != "/p/queue/2" || !strings.Contains(be.Error(), "an earlier waiter (pid 7 on h") {
		t.Fatalf("unqueued claim behind a waiter on srv/b: %v; want busy, queued behind /p/queue/2", be)
	}
	if c.busyKey != "/p/queue/3" || c.busyPrefix || !c.busyQueue || c.busyRev != 11 {
		t.Errorf("busy state %q %v %v %d; want the nearest earlier waiter's key watched from revision 11", c.busyKey, c.busyPrefix, c.busyQueue, c.busyRev)
	}
	// Queued at revision 10 (key 3 is its own): only key 2 is ahead.
	c.qkey, c.qrev, c.lease, c.qlease = "/p/queue/3", 10, &lease{id: 3}, 3
	if be := c.ahead(q, 11, nil); be == nil || c.busyKey != "/p/queue/2" {
		t.Errorf("queued behind key 2: %v, watching %q; want busy, watching /p/queue/2", be, c.busyKey)
	}
	c.qrev = 9
	if be := c.ahead(q, 11, nil); be != nil {
		t.Errorf("queued at revision 9: %v; want no earlier waiter", be)
	}
	c.qkey, c.qrev, c.lease, c.qlease = "", 0, nil, 0
	if be := c.ahead(q[:1], 10, nil); be != nil {
		t.Errorf("a disjoint waiter: %v; want nil", be)
	}
}

// TestQueueAheadPools: an earlier waiter whose key lists a pool reserves
// one of its slots (one per listing); a claim on the pool yields while the
// free slots do not exceed the reservations, not when they do, not to its
// own key, not to a later one, and not without the pool read.
func TestQueueAheadPools(t *testing.T) {
	b := &Backend{cfg: Config{Prefix: "/p"}}
	c := &claim{b: b, pools: []pool{{template: "/t/s-{i}", size: 2, prefix: PoolPrefix("/p", "/t/s-{i}")}}}
	P, U := PoolPrefix("/p", "/t/s-{i}"), PoolPrefix("/p", "/t/u-{i}")
	w := queueValue{Holder: Holder{Host: "h", PID: 7}, Pools: []string{P}}
	other := queueValue{Pools: []string{U}}
	q := []*queueKV{{key: "/p/queue/1", rev: 5, v: w}, {key: "/p/queue/2", rev: 6, v: other}}
	for taken, busy := range map[int]bool{0: false, 1: true, 2: true} {
		be := c.ahead(q, 9, map[string]int{P: taken})
		if (be != nil) != busy {
			t.Errorf("%d of 2 slots taken, one reserved: busy %v; want %v", taken, be, busy)
			continue
		}
		if be == nil {
			continue
		}
		if !be.queued || be.Key != "/p/queue/1" || !strings.Contains(be.Error(), "an earlier waiter (pid 7 on h") || !strings.Contains(be.Error(), "queued for slots of pool /t/s-{i}") {
			t.Errorf("%d taken: %v (key %s); want the waiter on /p/queue/1 named, queued for the pool", taken, be, be.Key)
		}
		if c.busyKey != "/p/queue/" || c.busyEnd != "/p/slots0" || !c.busyQueue || c.busyRev != 9 {
			t.Errorf("busy state %q..%q queue %v rev %d; want the queue and the slots watched from 9", c.busyKey, c.busyEnd, c.busyQueue, c.busyRev)
		}
		if !c.poolWakes("/p/queue/1") || c.poolWakes("/p/queue/2") || !c.poolWakes(P+"1") || c.poolWakes(U+"0") {
			t.Errorf("wakes: the waiter's key %v, another's %v, a slot %v, another pool's slot %v; want true, false, true, false",
				c.poolWakes("/p/queue/1"), c.poolWakes("/p/queue/2"), c.poolWakes(P+"1"), c.poolWakes(U+"0"))
		}
	}
	// Listed twice (a template given twice): two reservations.
	twice := []*queueKV{{key: "/p/queue/1", rev: 5, v: queueValue{Pools: []string{P, P}}}}
	if be := c.ahead(twice, 9, map[string]int{P: 0}); be == nil {
		t.Error("2 slots free, 2 reserved: not busy; want busy")
	}
	if be := c.ahead(q, 9, nil); be != nil {
		t.Errorf("no pool read: %v; want nil", be)
	}
	// Queued itself at revision 5 (key 1 is its own): nobody is ahead.
	c.qkey, c.qrev, c.lease, c.qlease = "/p/queue/1", 5, &lease{id: 1}, 1
	if be := c.ahead(q, 9, map[string]int{P: 2}); be != nil || c.poolsAhead {
		t.Errorf("queued first: %v (pools ahead %v); want nil", be, c.poolsAhead)
	}
	// Queued behind a waiter that reserves no pool now: it may after its
	// next attempt, so the queue is read again (poolsAhead).
	c.qkey, c.qrev = "/p/queue/3", 8
	unreserved := []*queueKV{{key: "/p/queue/1", rev: 5, v: queueValue{}}, {key: "/p/queue/3", rev: 8}}
	if be := c.ahead(unreserved, 9, map[string]int{P: 0}); be != nil || !c.poolsAhead {
		t.Errorf("behind a waiter reserving nothing: %v (pools ahead %v); want nil, pools ahead", be, c.poolsAhead)
	}
}

// FuzzQueueValue: any bytes in a queue key's value (anyone who can write
// the prefix can put them there) parse without a panic, and a value that
// parses is checked for intersection without one.
func FuzzQueueValue(f *testing.F) {
	f.Add([]byte(`{"host":"h","pid":1,"since":"x","keys":["0123456789abcdef"]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`{"keys":[],"pools":["/withlock/slots/%2Ftmp%2Fs-%7Bi%7D/","x"]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{0xff, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, ok := parseQueueValue(data)
		if !ok {
			return
		}
		v.intersects(map[string]bool{"0123456789abcdef": true})
		_ = describe(v.Holder, v.Since)
	})
}

func TestShortID(t *testing.T) {
	for in, want := range map[string]string{"/p/paths/0123456789abcdef0123": "0123456789abcdef", "abc": "abc", "/x/": ""} {
		if got := shortID(in); got != want {
			t.Errorf("shortID(%q) = %q; want %q", in, got, want)
		}
	}
}

// A queue key's value is outside input: a crafted one with a 1 MB command
// line and control characters makes a short, one-line description (the
// skip message that quotes it), not a 1 MB one.
func TestDescribeCutsCraftedValue(t *testing.T) {
	h := Holder{Host: strings.Repeat("h", 5000) + "\x1b[2J", PID: 7, Cmd: strings.Repeat("x", 1<<20) + "\n\u202e"}
	s := describe(h, strings.Repeat("9", 5000))
	if len(s) > 500 || strings.ContainsAny(s, "\n\x1b\u202e") {
		t.Errorf("describe of a crafted value: %d bytes, %q…", len(s), s[:min(len(s), 80)])
	}
}

// A value that names no pid or host says so, not "pid 0 on ".
func TestDescribeUnnamed(t *testing.T) {
	for h, want := range map[Holder]string{
		{}:                  "a process its key does not name",
		{Host: "h"}:         "a process on h",
		{PID: 3}:            "pid 3",
		{PID: 3, Host: "h"}: "pid 3 on h",
		{PID: 3, Cmd: "c"}:  "pid 3 (c)",
	} {
		if got := describe(h, ""); got != want {
			t.Errorf("describe(%+v) = %q; want %q", h, got, want)
		}
	}
}
