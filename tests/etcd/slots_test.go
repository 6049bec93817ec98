//go:build etcd

package etcd

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A slot template given twice in one call (a job that counts twice) takes
// two distinct slots of the one pool, the lowest free ones, all or nothing:
// what the local backend does (tests/testdata/withlock/slots_twice.txtar).
// It used to fail with etcd's raw "duplicate key given in txn request"
// (125).
func TestSlotTemplateTwice(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "slot-{i}.lock")
	pool := []string{"--backend", "etcd", "--key-prefix", p, "--slots", "4", "--slot-file", tmpl}
	twice := append(append([]string{}, pool...), "--slots", "4", "--slot-file", tmpl)
	slotKey := func(i int) string { return fmt.Sprintf("%s/slots/%s/%d", p, url.PathEscape(tmpl), i) }

	r := run(t, nil, "withlock", append(twice, "--", "sh", "-c", `echo "$WITHLOCK_SLOT"`)...)
	if r.code != 0 || r.stdout != "0,1\n" {
		t.Fatalf("a free pool: exit %d, slots %q, stderr %q; want 0,1", r.code, r.stdout, r.stderr)
	}

	// With slot 0 held by another job: 1 and 2.
	release := filepath.Join(dir, "release")
	hold := func(args []string) (*os.Process, func()) {
		cmd := command(nil, "withlock", append(args, "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd.Process, func() { cmd.Wait() }
	}
	h0, wait0 := hold(pool)
	defer h0.Kill()
	waitFor(t, 10*time.Second, "slot 0 held", func() bool { return keys(t, p)[slotKey(0)] != 0 })
	w, waitW := hold(twice)
	defer w.Kill()
	waitFor(t, 10*time.Second, "slots 1 and 2 held", func() bool {
		k := keys(t, p)
		return k[slotKey(1)] != 0 && k[slotKey(2)] != 0
	})
	if k := keys(t, p); k[slotKey(1)] != k[slotKey(2)] || k[slotKey(1)] == k[slotKey(0)] {
		t.Errorf("slots 1 and 2 are not held under the weight-2 job's one lease: %v", k)
	}

	// One slot left (3): the weight-2 job skips, holding nothing after,
	// and a single holder still gets slot 3.
	r = run(t, nil, "withlock", append(append([]string{"-v"}, twice...), "--", "touch", filepath.Join(dir, "ran"))...)
	if r.code != 75 || !strings.Contains(r.stderr, "slot pool "+tmpl) || !strings.Contains(r.stderr, "is busy") {
		t.Errorf("one slot left: exit %d, stderr %q; want 75, the pool busy", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran with one slot for a weight-2 job")
	}
	if k := keys(t, p); len(k) != 3 {
		t.Errorf("keys after the skip: %v; want the three held", k)
	}
	r = run(t, nil, "withlock", append(pool, "--", "sh", "-c", `echo "$WITHLOCK_SLOT"`)...)
	if r.code != 0 || r.stdout != "3\n" {
		t.Errorf("a single job with one slot left: exit %d, slots %q, stderr %q; want 3", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(release, nil, 0o644)
	wait0()
	waitW()
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after every holder exited: %v", k)
	}
}

// Weight-1 and weight-2 jobs on one pool of 4, concurrently: never a slot
// held twice (the worker's O_EXCL markers per slot), never an index out of
// the pool, and weight-2 jobs get in (a spurious busy after another holder
// took the slots dealt to them is dealt again).
func TestSlotTemplateTwiceConcurrent(t *testing.T) {
	need(t)
	p := prefix(t)
	mark := t.TempDir()
	tmpl := "/tmp/twice-{i}.lock"
	deadline := time.Now().Add(4 * time.Second)
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		weight := 1 + w%2
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"--key-prefix", p}
			var pools []string
			for range weight {
				args = append(args, "--slots", "4", "--slot-file", tmpl)
				pools = append(pools, "twice:4")
			}
			args = append(append(args, "--", self), pools...)
			for time.Now().Before(deadline) {
				r := run(t, []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark, "ETCDTEST_HOLD=200ms"}, "withlock-etcd", args...)
				mu.Lock()
				codes[fmt.Sprintf("weight %d exit %d", weight, r.code)]++
				mu.Unlock()
				if r.code != 0 && r.code != 75 {
					t.Errorf("weight %d: exit %d: %s", weight, r.code, r.stderr)
					return
				}
				if r.code == 75 {
					time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	n := checkMarks(t, mark)
	t.Logf("%d critical sections: %v", n, codes)
	if codes["weight 2 exit 0"] == 0 || codes["weight 1 exit 0"] == 0 {
		t.Errorf("a weight never got in: %v", codes)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left: %v", k)
	}
}
