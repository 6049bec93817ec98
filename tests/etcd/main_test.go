//go:build etcd

// Package etcd tests withlock's etcd backend against a real 3-member etcd
// cluster on loopback (one process per member, so members can be killed
// and frozen), with the real binaries. Run it with .ci/etcd.sh, or
//
//	go test -tags etcd -count=1 -v ./tests/etcd/
//
// It is behind a build tag so that tests/all.sh does not run it next to
// the CPU-heavy stress tests (a starved cluster elects leaders and makes
// lease timing flaky). Without etcd installed every test is skipped, unless
// CI is set: then the suite fails.
package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crongate/crongate/tests/etcd/cluster"
	"github.com/crongate/crongate/tests/testbin"
)

var (
	binDir  string
	cl      *cluster.Cluster
	skipAll string
	self    string // this test binary, also the critical-section worker
)

// Ports of the test cluster; ETCD_TEST_PORTS=CLIENT,PEER moves them.
var clientBase, peerBase = 23791, 23801

func TestMain(m *testing.M) {
	if os.Getenv("ETCDTEST_WORKER") != "" {
		os.Exit(worker(os.Args[1:]))
	}
	testbin.CatchHangup()
	os.Exit(mainWithCluster(m))
}

func mainWithCluster(m *testing.M) int {
	defer testbin.Cleanup()
	self, _ = os.Executable()
	if cluster.Find() == "" {
		if os.Getenv("CI") != "" {
			fmt.Println("FAIL: etcd is not installed; CI requires the etcd suite (.ci/run installs it)")
			return 1
		}
		skipAll = "etcd is not installed (apt-get install etcd-server etcd-client)"
		return m.Run()
	}
	if p := os.Getenv("ETCD_TEST_PORTS"); p != "" {
		fmt.Sscanf(p, "%d,%d", &clientBase, &peerBase)
	}
	var err error
	if binDir, err = testbin.Dir(); err != nil {
		fmt.Println("FAIL: build:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "withlock-etcd-test-")
	if err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The binaries' version cache (docs/etcd.md, "Server versions") of
	// the suite's own, never the user's.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t0 := time.Now()
	cl, err = cluster.Start(dir, 3, clientBase, peerBase)
	if err != nil {
		fmt.Println("FAIL: start etcd:", err)
		return 1
	}
	fmt.Printf("etcd cluster of 3 up in %v at %s\n", time.Since(t0).Round(time.Millisecond), cl.EndpointList())
	defer cl.Close()
	return m.Run()
}

// need skips the test when etcd is missing (never under CI, see TestMain)
// and makes sure the cluster is whole and healthy before it starts.
func need(t *testing.T) {
	t.Helper()
	if skipAll != "" {
		t.Skip(skipAll)
	}
	for i := range cl.Members {
		cl.Thaw(i)
		if !cl.Running(i) {
			if err := cl.Restart(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cl.WaitHealthy(30 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, cl.Logs(20))
	}
}

// prefix is a key prefix of the test's own.
func prefix(t *testing.T) string {
	return "/t/" + strings.ReplaceAll(t.Name(), "/", "_")
}

// result is one finished run of a binary.
type result struct {
	code           int
	stdout, stderr string
	dur            time.Duration
}

// run runs a binary from binDir with the cluster's endpoints in its
// environment, and waits for it (at most a minute).
func run(t *testing.T, env []string, bin string, args ...string) result {
	t.Helper()
	cmd := command(env, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %q did not finish within a minute", bin, args)
	}
	r := result{code: exitCode(cmd, err), stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	return r
}

func command(env []string, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Env = append(os.Environ(), "WITHLOCK_ETCD_ENDPOINTS="+cl.EndpointList(), "WITHLOCK_BACKEND=")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// keys returns the keys under prefix and their leases.
func keys(t *testing.T, prefix string) map[string]int64 {
	t.Helper()
	cli, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	return keysOf(t, cli, prefix)
}

// keysOf is keys read through cli (a client of another cluster).
func keysOf(t *testing.T, cli *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	// Attempts of 1 s, so that one sent to a frozen member is sent again
	// to another.
	var resp *clientv3.GetResponse
	var err error
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err = cli.Get(ctx, prefix+"/", clientv3.WithPrefix())
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	m := map[string]int64{}
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = kv.Lease
	}
	return m
}

// waitFor polls cond every 20 ms until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchers is the number of watchers the running, unfrozen members serve
// (etcd_debugging_mvcc_watcher_total from their /metrics): a --wait waiter
// watches the key that was busy, so a rise says it has tried, failed and
// is waiting.
func watchers(t *testing.T) int {
	t.Helper()
	n := 0
	eachMetric(t, false, func(_ int, name string, v float64) {
		if name == "etcd_debugging_mvcc_watcher_total" {
			n += int(v)
		}
	})
	return n
}

// eachMetric calls f with every sample (name with its labels, value) of
// the /metrics of every running, unfrozen member i. A member that does
// not answer is skipped, or fails the test if must.
func eachMetric(t *testing.T, must bool, f func(i int, name string, v float64)) {
	t.Helper()
	for i, ep := range cl.Endpoints() {
		if !cl.Running(i) || cl.Members[i].Frozen() {
			continue
		}
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(ep + "/metrics")
		if err != nil {
			if must {
				t.Fatal(err)
			}
			continue
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.Lines(string(data)) {
			fs := strings.Fields(line)
			if len(fs) < 2 || strings.HasPrefix(fs[0], "#") {
				continue
			}
			if v, err := strconv.ParseFloat(fs[len(fs)-1], 64); err == nil {
				f(i, strings.Join(fs[:len(fs)-1], " "), v)
			}
		}
	}
}

// leaseTTL returns the remaining TTL of lease id in seconds, -1 when the
// lease is gone (expired or revoked).
func leaseTTL(t *testing.T, id int64) int64 {
	t.Helper()
	var ttl int64
	withClient(t, func(ctx context.Context, cli *clientv3.Client) {
		r, err := cli.TimeToLive(ctx, clientv3.LeaseID(id))
		if err != nil {
			t.Fatalf("lease %x: %v", id, err)
		}
		ttl = r.TTL
	})
	return ttl
}

// withClient calls f with a client of the test cluster and a context of
// 5 s, and closes the client after.
func withClient(t *testing.T, f func(context.Context, *clientv3.Client)) {
	t.Helper()
	cli, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f(ctx, cli)
}

// leaseAlive reports whether lease id lives. A member that has just become
// leader may not have applied the lease yet and answer -1 for a while: a
// "gone" is believed only when it is still the answer 3 s later (a lease
// that is really gone never comes back).
func leaseAlive(t *testing.T, id int64) bool {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		if leaseTTL(t, id) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// progress returns how many critical sections have ended in mark.
func progress(mark string) int {
	c, _ := os.ReadFile(filepath.Join(mark, "COUNT"))
	return len(c)
}

// waitProgress waits until n more critical sections have ended in mark
// than when it was called (the traffic goes on), at most d.
func waitProgress(t *testing.T, mark string, n int, d time.Duration, what string) {
	t.Helper()
	start := progress(mark)
	waitFor(t, d, fmt.Sprintf("%d more critical sections %s", n, what), func() bool { return progress(mark) >= start+n })
}

func pathKey(prefix, rel string) string {
	h := sha256.Sum256([]byte(rel))
	return prefix + "/paths/" + hex.EncodeToString(h[:])
}

// worker is the critical section (this test binary, run as the command
// with ETCDTEST_WORKER set). Like tests/csworker, it claims an O_EXCL
// marker per post and per slot. Its arguments are the pools, NAME:SIZE
// each (the slot index must be below SIZE, and the holders of the pool
// inside at once are counted in mark/in-NAME/), then optionally "--", the
// host's tree root and the posts it works on. A post's marker is keyed on
// the post as the worker itself reaches it: its path relative to the root,
// both with symlinks resolved by the worker, never on what withlock says
// (WITHLOCK_KEY_PATHS). So holders on different "hosts" (different roots,
// different local paths, one tree) collide on one marker even if withlock
// keyed them apart. A WITHLOCK_KEY_PATHS that is not that set of relative
// paths is recorded too.
func worker(args []string) int {
	mark := os.Getenv("ETCDTEST_MARK")
	pools, posts := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		pools, posts = args[:i], args[i+1:]
	}
	var names []string
	if len(posts) > 0 {
		var rels []string
		root, err := filepath.EvalSymlinks(posts[0])
		if err != nil {
			violation(mark, "cannot resolve the root: "+err.Error())
		}
		for _, p := range posts[1:] {
			r, err := filepath.EvalSymlinks(p)
			if err == nil {
				r, err = filepath.Rel(root, r)
			}
			if err != nil || strings.HasPrefix(r, "..") {
				violation(mark, fmt.Sprintf("post %s is not in the tree %s: %v", p, root, err))
				continue
			}
			rels = append(rels, r)
		}
		slices.Sort(rels)
		rels = slices.Compact(rels)
		for _, r := range rels {
			names = append(names, "post-"+pathHash(r))
		}
		var reported []string
		if err := json.Unmarshal([]byte(os.Getenv("WITHLOCK_KEY_PATHS")), &reported); err != nil {
			violation(mark, "bad WITHLOCK_KEY_PATHS: "+err.Error())
		}
		slices.Sort(reported)
		if !slices.Equal(reported, rels) {
			violation(mark, fmt.Sprintf("withlock says it locked %q, the posts are %q", reported, rels))
		}
	}
	idx := strings.Split(os.Getenv("WITHLOCK_SLOT"), ",")
	var inside []string
	for i, p := range pools {
		name, size, _ := strings.Cut(p, ":")
		n, _ := strconv.Atoi(size)
		if i >= len(idx) {
			violation(mark, fmt.Sprintf("no slot of pool %s in WITHLOCK_SLOT=%q", name, os.Getenv("WITHLOCK_SLOT")))
			continue
		}
		s, err := strconv.Atoi(idx[i])
		if err != nil || s < 0 || s >= n {
			violation(mark, fmt.Sprintf("slot %q of pool %s outside 0..%d", idx[i], name, n-1))
		}
		names = append(names, "pool-"+name+"-"+idx[i])
		dir := filepath.Join(mark, "in-"+name)
		os.MkdirAll(dir, 0o755)
		f := filepath.Join(dir, strconv.Itoa(os.Getpid()))
		os.WriteFile(f, nil, 0o644)
		inside = append(inside, f)
		ents, _ := os.ReadDir(dir)
		appendTo(filepath.Join(mark, "max-"+name), fmt.Sprintf("%d\n", len(ents)))
	}
	var made []string
	// TERM (withlock-etcd stopping the command on a lost lease) ends the
	// critical section: the markers go, as at a normal end.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var mu sync.Mutex
	go func() {
		<-term
		mu.Lock()
		for _, n := range made {
			os.Remove(filepath.Join(mark, n))
		}
		for _, f := range inside {
			os.Remove(f)
		}
		os.Exit(128 + int(syscall.SIGTERM))
	}()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		f, err := os.OpenFile(filepath.Join(mark, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			violation(mark, fmt.Sprintf("overlap on %s: %v", n, err))
			continue
		}
		f.Close()
		made = append(made, n)
	}
	mu.Unlock()
	hold, _ := time.ParseDuration(os.Getenv("ETCDTEST_HOLD"))
	time.Sleep(hold) // the critical section's length, not a wait for anything
	if until := os.Getenv("ETCDTEST_UNTIL"); until != "" {
		// Held until the test says so (the file appears), or stopped.
		for {
			if _, err := os.Stat(until); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	mu.Lock()
	for _, n := range made {
		os.Remove(filepath.Join(mark, n))
	}
	for _, f := range inside {
		os.Remove(f)
	}
	appendTo(filepath.Join(mark, "COUNT"), "w")
	return 0
}

func violation(mark, msg string) {
	appendTo(filepath.Join(mark, "VIOLATIONS"), fmt.Sprintf("pid %d: %s\n", os.Getpid(), msg))
}

func appendTo(name, s string) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(3)
	}
	f.WriteString(s)
	f.Close()
}

// checkMarks fails the test on any recorded overlap and returns how many
// critical sections ran.
func checkMarks(t *testing.T, mark string) int {
	t.Helper()
	if v, err := os.ReadFile(filepath.Join(mark, "VIOLATIONS")); err == nil {
		t.Fatalf("mutual exclusion violated:\n%s", v)
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(filepath.Join(mark, "COUNT"))
	return len(c)
}

// maxInside is the largest number of holders of pool name seen inside at
// once.
func maxInside(t *testing.T, mark, name string) int {
	data, _ := os.ReadFile(filepath.Join(mark, "max-"+name))
	m := 0
	for _, l := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(l)
		m = max(m, n)
	}
	return m
}
