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
	be := c.ahead(q, 11)
	if be == nil || !be.queued || be.Key != "/p/queue/2" || !strings.Contains(be.Error(), "an earlier waiter (pid 7 on h") {
		t.Fatalf("unqueued claim behind a waiter on srv/b: %v; want busy, queued behind /p/queue/2", be)
	}
	if c.busyKey != "/p/queue/3" || c.busyPrefix || !c.busyQueue || c.busyRev != 11 {
		t.Errorf("busy state %q %v %v %d; want the nearest earlier waiter's key watched from revision 11", c.busyKey, c.busyPrefix, c.busyQueue, c.busyRev)
	}
	// Queued at revision 10 (key 3 is its own): only key 2 is ahead.
	c.qkey, c.qrev, c.lease, c.qlease = "/p/queue/3", 10, &lease{id: 3}, 3
	if be := c.ahead(q, 11); be == nil || c.busyKey != "/p/queue/2" {
		t.Errorf("queued behind key 2: %v, watching %q; want busy, watching /p/queue/2", be, c.busyKey)
	}
	c.qrev = 9
	if be := c.ahead(q, 11); be != nil {
		t.Errorf("queued at revision 9: %v; want no earlier waiter", be)
	}
	c.qkey, c.qrev, c.lease, c.qlease = "", 0, nil, 0
	if be := c.ahead(q[:1], 10); be != nil {
		t.Errorf("a disjoint waiter: %v; want nil", be)
	}
}

// FuzzQueueValue: any bytes in a queue key's value (anyone who can write
// the prefix can put them there) parse without a panic, and a value that
// parses is checked for intersection without one.
func FuzzQueueValue(f *testing.F) {
	f.Add([]byte(`{"host":"h","pid":1,"since":"x","keys":["0123456789abcdef"]}`))
	f.Add([]byte(`{"keys":null}`))
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
