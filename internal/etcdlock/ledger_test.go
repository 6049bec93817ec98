//go:build linux

package etcdlock

import (
	"encoding/json"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// rangeOf is the answer to a read of one key: held (under lease, created
// at rev) or not.
func rangeOf(key string, lease, rev int64) *pb.ResponseOp {
	rr := &pb.RangeResponse{}
	if rev > 0 {
		rr.Kvs = []*mvccpb.KeyValue{{Key: []byte(key), Lease: lease, CreateRevision: rev, ModRevision: rev}}
	}
	return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: rr}}
}

func queueKey(t *testing.T, b *Backend, lease, rev int64, rels ...string) *mvccpb.KeyValue {
	v := queueValue{Holder: Holder{Host: "h", PID: int(lease)}, Keeps: true}
	for _, rel := range rels {
		v.Keys = append(v.Keys, shortID(b.PathKey(rel)))
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &mvccpb.KeyValue{Key: []byte(b.queuePrefix() + string(rune('a'+lease))), Lease: lease, CreateRevision: rev, Value: data}
}

func del(key string, rev int64) *clientv3.Event {
	return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
}

// TestLedger: a queued claim's ledger holds the earlier waiters on its
// paths and its keys held by others, not later waiters, disjoint ones, a
// holder's queue key (its key answers for it) or its own key; it empties
// only by deletes newer than what was read, and then lets the claim go
// straight to the lock transaction.
func TestLedger(t *testing.T) {
	b := &Backend{cfg: Config{Prefix: "/p"}}
	c := &claim{b: b}
	for _, rel := range []string{"srv/a", "srv/b"} {
		c.keys = append(c.keys, pathKey{key: b.PathKey(rel), rel: rel, canon: "/" + rel})
	}
	own := queueKey(t, b, 9, 20, "srv/a", "srv/b")
	c.qkey, c.qrev, c.lease, c.qlease = string(own.Key), 20, &lease{id: 9}, 9
	c.led = &ledger{lease: 9, cancel: func() {}}
	if !c.keepsLedger() {
		t.Fatal("a set of two paths without pools keeps no ledger")
	}

	holder := queueKey(t, b, 1, 5, "srv/a")    // holds srv/a (read below)
	waiter := queueKey(t, b, 2, 10, "srv/b")   // waits for srv/b
	disjoint := queueKey(t, b, 3, 11, "srv/c") // waits for another path
	later := queueKey(t, b, 4, 30, "srv/a")    // queued after the claim
	queue := []*mvccpb.KeyValue{holder, waiter, disjoint, own, later}
	reads := []*pb.ResponseOp{rangeOf(c.keys[0].key, 1, 6), rangeOf(c.keys[1].key, 0, 0)}

	be := c.judge(31, queue, reads, c.keys, nil)
	if be == nil || be.Key != string(waiter.Key) {
		t.Fatalf("judge: %v; want busy behind the waiter on srv/b", be)
	}
	want := map[string]int64{string(waiter.Key): 10, c.keys[0].key: 6}
	if !equal(c.led.wait, want) {
		t.Fatalf("ledger %v; want %v", c.led.wait, want)
	}
	if c.led.ready(c) {
		t.Fatal("the claim would try with two entries in its ledger")
	}

	// A delete older than the key read is another holder's: it stays.
	c.led.apply([]*clientv3.Event{del(c.keys[0].key, 6), del(string(disjoint.Key), 40)})
	if !equal(c.led.wait, want) {
		t.Fatalf("after stale and unrelated deletes: %v; want %v", c.led.wait, want)
	}
	// The holder releases (its key and queue key in one revision).
	c.led.apply([]*clientv3.Event{del(c.keys[0].key, 41), del(string(holder.Key), 41)})
	if _, ok := c.led.wait[c.keys[0].key]; ok || len(c.led.wait) != 1 {
		t.Fatalf("after the holder's release: %v; want the waiter only", c.led.wait)
	}
	// A lock transaction found srv/b taken by the waiter, which went
	// out of the queue when it took it (an older withlock does).
	c.led.apply([]*clientv3.Event{del(string(waiter.Key), 42)})
	c.led.hold(c.keys[1].key, 42)
	if c.led.ready(c) {
		t.Fatal("ready with srv/b held")
	}
	c.led.apply([]*clientv3.Event{del(c.keys[1].key, 50)})
	if !c.led.ready(c) || c.needsCheck() {
		t.Fatalf("ledger %v empty: want the claim to try without a read first", c.led.wait)
	}
	// A poll interval passed without the ledger emptying: read first.
	c.led.recheck = true
	if !c.needsCheck() {
		t.Error("after a silent poll interval the claim would try without a read")
	}
	c.led.recheck = false
	// A lost lease ends the place in the queue, and the ledger with it.
	c.lease = &lease{id: 10}
	if c.led.valid(c) || !c.needsCheck() {
		t.Error("a ledger of a lost queue key is still used")
	}

	// Read before the claim entered the queue: the ledger takes nothing.
	c.lease, c.qrev = &lease{id: 9}, 20
	c.led = &ledger{lease: 9, cancel: func() {}}
	c.judge(19, queue, reads, c.keys, nil)
	if c.led.wait != nil {
		t.Error("a ledger taken from a read older than the queue key")
	}
}

// TestJudgeHolderQueueKey: a newcomer whose path is held by a holder
// that keeps its queue key is told about the path and its holder, not
// about "an earlier waiter", and watches the path key.
func TestJudgeHolderQueueKey(t *testing.T) {
	b := &Backend{cfg: Config{Prefix: "/p"}}
	c := &claim{b: b, keys: []pathKey{{key: b.PathKey("srv/a"), rel: "srv/a", canon: "/srv/a"}}}
	holder := queueKey(t, b, 1, 5, "srv/a")
	be := c.judge(8, []*mvccpb.KeyValue{holder}, []*pb.ResponseOp{rangeOf(c.keys[0].key, 1, 6)}, c.keys, nil)
	if be == nil || be.queued || be.Key != c.keys[0].key || c.busyKey != c.keys[0].key || c.busyQueue {
		t.Fatalf("judge: %+v, watching %q (queue %v); want busy on the path key", be, c.busyKey, c.busyQueue)
	}
	// A waiter with pools (or an older withlock) holds path keys for a
	// moment while it waits: a transaction that found a pool full put
	// them and will delete them to keep its place. Its key does not say
	// Keeps, so it stays an earlier waiter.
	waiter := queueKey(t, b, 2, 5, "srv/a")
	waiter.Value = []byte(strings.Replace(string(waiter.Value), `,"keeps":true`, "", 1))
	be = c.judge(8, []*mvccpb.KeyValue{waiter}, []*pb.ResponseOp{rangeOf(c.keys[0].key, 2, 6)}, c.keys, nil)
	if be == nil || !be.queued || be.Key != string(waiter.Key) {
		t.Fatalf("judge, a pool waiter's key on a lease holding the path for a moment: %+v; want busy behind it", be)
	}
	// Not read with it (a set too large for one read): the queue key
	// still makes the claim yield, to the same process.
	be = c.judge(8, []*mvccpb.KeyValue{holder}, nil, nil, nil)
	if be == nil || !be.queued || be.Key != string(holder.Key) {
		t.Fatalf("judge without the path read: %+v; want busy behind the queue key", be)
	}
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
