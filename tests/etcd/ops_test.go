//go:build etcd

package etcd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/tests/etcd/cluster"
)

// An operator's work on a live cluster while withlock processes hold and
// wait (issue 33, item 4): etcdctl move-leader, member remove and add,
// compact and defrag. The holders are real `withlock --backend etcd`
// processes; their critical sections are the worker (main_test.go), which
// records any overlap, and each first writes its fencing revision to a
// ledger in the order the lock admits them: the revisions must rise
// strictly.

// needCtl fails the test without etcdctl (installed with etcd, see
// .ci/etcd.sh).
func needCtl(t *testing.T) {
	t.Helper()
	if cluster.Etcdctl() == "" {
		t.Fatal("etcdctl is not installed (apt-get install etcd-client)")
	}
}

// fenced is one path taken in turn by withlock processes whose critical
// sections are checked: the worker's markers in mark, and the ledger, a
// line "NAME REVISION" per critical section, written as it begins.
type fenced struct {
	p, root, post, mark, ledger string
}

func newFenced(t *testing.T) *fenced {
	dir := t.TempDir()
	f := &fenced{p: prefix(t), root: filepath.Join(dir, "tree"), mark: filepath.Join(dir, "mark"), ledger: filepath.Join(dir, "ledger")}
	f.post = filepath.Join(f.root, "post.md")
	os.MkdirAll(f.root, 0o755)
	os.MkdirAll(f.mark, 0o755)
	os.WriteFile(f.post, []byte("x"), 0o644)
	return f
}

// cmd is a withlock --backend etcd process named name taking the path
// (with more flags, --wait say), whose critical section lasts hold, or,
// with until set, until that file exists.
func (f *fenced) cmd(name, hold, until string, more ...string) *proc {
	args := append([]string{"--backend", "etcd", "--key-prefix", f.p, "--key-root", f.root, "--paths", f.post}, more...)
	args = append(args, "--", "sh", "-c", `printf '%s %s\n' "$1" "$WITHLOCK_FENCE_REVISION" >> "$0"; shift; exec "$@"`,
		f.ledger, name, self, "--", f.root, f.post)
	env := []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + f.mark, "ETCDTEST_HOLD=" + hold}
	if until != "" {
		env = append(env, "ETCDTEST_UNTIL="+until)
	}
	c := &proc{name: name, cmd: command(env, "withlock", args...), done: make(chan struct{})}
	c.cmd.Stderr = &c.stderr
	return c
}

// proc is a process, its stderr, and done, closed once it has ended.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	code   int
}

func (c *proc) start() error {
	if err := c.cmd.Start(); err != nil {
		return err
	}
	go func() { err := c.cmd.Wait(); c.code = exitCode(c.cmd, err); close(c.done) }()
	return nil
}

// wait waits until the process has ended, or deadline; false then, and
// the process is killed.
func (c *proc) wait(deadline <-chan time.Time) bool {
	select {
	case <-c.done:
		return true
	case <-deadline:
		c.kill()
		return false
	}
}

func (c *proc) kill() {
	c.cmd.Process.Kill()
	<-c.done
}

// entry is one line of the ledger.
type entry struct {
	name string
	rev  int64
}

// check fails the test on an overlap, or on a fencing revision that is not
// above the one before it, and returns the ledger.
func (f *fenced) check(t *testing.T) []entry {
	t.Helper()
	n := checkMarks(t, f.mark)
	data, _ := os.ReadFile(f.ledger)
	var es []entry
	for l := range strings.Lines(string(data)) {
		name, rev, _ := strings.Cut(strings.TrimSpace(l), " ")
		r, err := strconv.ParseInt(rev, 10, 64)
		if err != nil || r <= 0 {
			t.Errorf("ledger line %q: no fencing revision", l)
			continue
		}
		if len(es) > 0 && r <= es[len(es)-1].rev {
			t.Errorf("fencing revision %d of %s after %d of %s: not increasing", r, name, es[len(es)-1].rev, es[len(es)-1].name)
		}
		es = append(es, entry{name, r})
	}
	if len(es) != n {
		t.Errorf("%d critical sections ended, %d began (ledger lines)", n, len(es))
	}
	return es
}

// load is n processes taking the fenced path in turn, each with --wait
// and a critical section of hold, again and again until stopped. Each
// run must exit 0.
type load struct {
	f     *fenced
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	runs  int
	fails []string
}

func startLoad(t *testing.T, f *fenced, n int, hold string) *load {
	l := &load{f: f, stop: make(chan struct{})}
	for w := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.once(fmt.Sprintf("p%d.%d", w+1, k+1), hold)
			}
		}()
	}
	t.Cleanup(l.halt)
	return l
}

// once runs one process to its end, at most 2 minutes (its wait is 90 s),
// and records a failure.
func (l *load) once(name, hold string) {
	c := l.f.cmd(name, hold, "", "--wait", "90s")
	if err := c.start(); err != nil {
		l.fail(fmt.Sprintf("%s: %v", name, err))
		return
	}
	if !c.wait(time.After(2 * time.Minute)) {
		l.fail(fmt.Sprintf("%s did not finish within 2 minutes: %s", name, c.stderr.String()))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs++
	if c.code != 0 {
		l.fails = append(l.fails, fmt.Sprintf("%s: exit %d: %s", name, c.code, strings.TrimSpace(c.stderr.String())))
	}
}

func (l *load) fail(s string) {
	l.mu.Lock()
	l.fails = append(l.fails, s)
	l.mu.Unlock()
}

// halt stops the load and waits for the processes in flight.
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// finish halts the load and fails the test on a run that did not exit 0,
// an overlap or a fencing revision out of order; it returns the ledger.
func (l *load) finish(t *testing.T) []entry {
	t.Helper()
	l.halt()
	es := l.f.check(t)
	t.Logf("%d runs, %d critical sections, fencing revisions %d..%d", l.runs, len(es), es[0].rev, es[len(es)-1].rev)
	for _, f := range l.fails {
		t.Errorf("a run failed: %s", f)
	}
	waitFor(t, 30*time.Second, "no key left", func() bool { return len(keys(t, l.f.p)) == 0 })
	return es
}

// underLoad starts the load of the operations' tests (six processes,
// critical sections of 300 ms), waits until it runs, and returns the
// leader then.
func underLoad(t *testing.T) (*fenced, *load, int) {
	t.Helper()
	need(t)
	needCtl(t)
	f := newFenced(t)
	l := startLoad(t, f, 6, "300ms")
	waitProgress(t, f.mark, 3, time.Minute, "before the operation")
	leader, err := cl.Leader()
	if err != nil {
		t.Fatal(err)
	}
	return f, l, leader
}

// Leadership moved three times (etcdctl move-leader, to each other member
// in turn and back) while six processes take one path in turn, each
// waiting (--wait) and holding it 300 ms: every move happens (every member
// names the new leader), every process exits 0, no two critical sections
// overlap, and the fencing revisions rise.
func TestMoveLeaderUnderHolders(t *testing.T) {
	f, l, from := underLoad(t)
	for k := range 3 {
		to := (from + 1) % len(cl.Members)
		before, held := progress(f.mark), len(keys(t, f.p))
		t0 := time.Now()
		if err := cl.MoveLeader(to, 30*time.Second); err != nil {
			t.Fatalf("move %d, m%d to m%d: %v", k+1, from+1, to+1, err)
		}
		now, err := cl.Leader()
		if err != nil || now != to {
			t.Fatalf("move %d: the leader is m%d (%v), want m%d", k+1, now+1, err, to+1)
		}
		t.Logf("move %d: leader m%d -> m%d in %v, begun with %d keys held (holder and waiters), %d critical sections ended meanwhile",
			k+1, from+1, to+1, time.Since(t0).Round(time.Millisecond), held, progress(f.mark)-before)
		from = to
		waitProgress(t, f.mark, 3, time.Minute, fmt.Sprintf("after move %d", k+1))
	}
	l.finish(t)
}

// A member removed (etcdctl member remove), its data deleted, added back
// (etcdctl member add) and started empty with --initial-cluster-state
// existing, while six processes take one path in turn as in
// TestMoveLeaderUnderHolders: the member comes back under a new ID and
// catches up, every process exits 0, no overlap, the fencing revisions
// rise. A follower, then the member that is the leader at the time.
func TestMemberReplacedUnderHolders(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			f, l, leader := underLoad(t)
			i := leader
			if which == "follower" {
				i = (leader + 1) % len(cl.Members)
			}
			before := progress(f.mark)
			t0 := time.Now()
			oldID, newID, err := cl.Replace(i, time.Minute)
			if err != nil {
				t.Fatalf("replacing m%d: %v\n%s", i+1, err, cl.Logs(20))
			}
			now, err := cl.Leader()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("m%d (the %s) replaced in %v: ID %x -> %x, leader now m%d, %d critical sections meanwhile",
				i+1, which, time.Since(t0).Round(time.Millisecond), oldID, newID, now+1, progress(f.mark)-before)
			waitProgress(t, f.mark, 3, time.Minute, "after the member came back")
			l.finish(t)
		})
	}
}

// Five waiters queued one after another behind a holder (withlock --wait)
// while the key space is compacted at the current revision — past every
// revision the waiters began watching at — and every member is
// defragmented (etcdctl compact, defrag); then every member is stopped
// and started again in turn, so that each waiter's watch is made again on
// another member from a revision the compaction removed. The holder
// releases: every waiter runs once, in the order they queued, with rising
// fencing revisions, no overlap, each exiting 0 within a bound.
func TestCompactDefragWhileWaiting(t *testing.T) {
	need(t)
	needCtl(t)
	f := newFenced(t)
	release := filepath.Join(t.TempDir(), "release")
	start := func(c *proc) {
		t.Helper()
		if err := c.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.kill)
	}
	holder := f.cmd("holder", "0s", release)
	start(holder)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, f.p)[pathKey(f.p, "post.md")] != 0 })
	var ws []*proc
	for i := range 5 {
		w := f.cmd("w"+strconv.Itoa(i+1), "50ms", "", "--wait", "120s")
		start(w)
		ws = append(ws, w)
		waitFor(t, 20*time.Second, w.name+"'s queue key", func() bool { return queueKeys(t, f.p) == i+1 })
	}
	// The waiters began watching before they put their queue keys
	// (ledger.go): the last of these revisions is past every one they
	// watch from.
	var queued int64
	withClient(t, func(ctx context.Context, cli *clientv3.Client) {
		r, err := cli.Get(ctx, f.p+"/queue/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range r.Kvs {
			queued = max(queued, kv.CreateRevision)
		}
	})
	// A write elsewhere, so that the compaction goes past the last
	// queue key's revision too.
	withClient(t, func(ctx context.Context, cli *clientv3.Client) {
		if _, err := cli.Put(ctx, f.p+"-elsewhere", "x"); err != nil {
			t.Fatal(err)
		}
	})
	rev, err := cl.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if rev <= queued {
		t.Fatalf("current revision %d is not after the last queue key's %d", rev, queued)
	}
	if err := cl.Compact(rev); err != nil {
		t.Fatal(err)
	}
	// The compaction took: what the waiters watch from is gone.
	withClient(t, func(ctx context.Context, cli *clientv3.Client) {
		_, err := cli.Get(ctx, f.p+"/", clientv3.WithPrefix(), clientv3.WithRev(queued))
		if err == nil || !strings.Contains(err.Error(), "compacted") {
			t.Fatalf("a read at revision %d after compacting at %d: %v, want compacted", queued, rev, err)
		}
		if _, err := cli.Delete(ctx, f.p+"-elsewhere"); err != nil {
			t.Fatal(err)
		}
	})
	for i := range cl.Members {
		if err := cl.Defrag(i); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("compacted at revision %d (the last waiter queued at %d), every member defragmented", rev, queued)
	for i := range cl.Members {
		t0 := time.Now()
		if err := cl.Stop(i); err != nil {
			t.Fatal(err)
		}
		stopped := time.Since(t0)
		if err := cl.Restart(i); err != nil {
			t.Fatal(err)
		}
		if err := cl.WaitHealthy(30 * time.Second); err != nil {
			t.Fatalf("after restarting m%d: %v\n%s", i+1, err, cl.Logs(20))
		}
		t.Logf("m%d stopped (SIGTERM) in %v, started again and healthy in %v", i+1, stopped.Round(time.Millisecond), (time.Since(t0) - stopped).Round(time.Millisecond))
	}
	if n := queueKeys(t, f.p); n != 5 {
		t.Errorf("%d queue keys after the compaction and restarts, want the 5 waiters'", n)
	}
	if data, _ := os.ReadFile(f.ledger); strings.Count(string(data), "\n") != 1 || !strings.HasPrefix(string(data), "holder ") {
		t.Fatalf("a waiter ran while the holder held the path: ledger %q", data)
	}
	released := time.Now()
	os.WriteFile(release, nil, 0o644)
	deadline := time.After(90 * time.Second)
	for _, c := range append([]*proc{holder}, ws...) {
		if !c.wait(deadline) {
			t.Fatalf("%s had not ended 90 s after the release: %s", c.name, c.stderr.String())
		}
		if c.code != 0 {
			t.Errorf("%s: exit %d: %s", c.name, c.code, c.stderr.String())
		}
	}
	es := f.check(t)
	var order []string
	for _, e := range es {
		order = append(order, e.name)
	}
	t.Logf("the waiters ran %v within %v of the release, fencing revisions %v", order, time.Since(released).Round(time.Millisecond), es)
	if got := strings.Join(order, " "); got != "holder w1 w2 w3 w4 w5" {
		t.Errorf("critical sections in the order %q, want holder w1 w2 w3 w4 w5 (each once, as they queued)", got)
	}
	waitFor(t, 30*time.Second, "no key left", func() bool { return len(keys(t, f.p)) == 0 })
}
