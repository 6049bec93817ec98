//go:build linux

// Command etcdbench measures the etcd backend against a 3-member loopback
// cluster it starts itself, next to the two usual ways of locking with
// etcd, in the same run: `etcdctl lock` and the client's concurrency.Mutex
// recipe (session + mutex). Run it through tests/etcd/bench.sh, which builds
// the binaries it times.
//
//	etcdbench -bin DIR [-n 300] [-secs 3] [-workers 8]
//	etcdbench -bin DIR -contended [-before DIR2] [-secs 6] [-rounds 4]
//	etcdbench -serve FILE [-pids FILE2]
//
// -contended times only the contended case as processes (every worker
// on one key, withlock --wait against etcdctl lock), with DIR2's withlock
// (a build of an earlier commit) as a third contender, in alternating
// rounds. -serve starts the cluster, writes its endpoints to FILE and
// keeps it up until its standard input ends (tests/bench/starve.sh);
// -pids also writes the members' process IDs to FILE2, one a line, in
// the endpoints' order (tests/etcd/freezewait.py freezes them).
//
// DIR holds withlock, withlock-etcd and withlock-nodispatch (withlock
// built without the --backend scan, to show the local path's cost).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/crongate/crongate/internal/etcdlock"
	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/tests/etcd/cluster"
)

var (
	bin     = flag.String("bin", "", "directory of the binaries")
	n       = flag.Int("n", 300, "sequential iterations per case")
	secs    = flag.Float64("secs", 3, "seconds per throughput case")
	workers = flag.Int("workers", 8, "parallel workers per throughput case")
	ports   = flag.String("ports", "23891,23901", "client,peer base ports")
	serve   = flag.String("serve", "", "start the cluster, write its endpoints to this file, keep it up until stdin ends")
	pids    = flag.String("pids", "", "with -serve: write the members' process IDs to this file")
	contend = flag.Bool("contended", false, "time only the contended case as processes")
	before  = flag.String("before", "", "a directory with an earlier build of withlock and withlock-etcd, timed beside this tree's")
	rounds  = flag.Int("rounds", 4, "alternating rounds of the contended case as processes")
	rpccost = flag.Bool("rpccost", false, "print the etcd members' CPU per request of each kind a lock cycle is made of")
)

func main() {
	// Long: the benchmark's cases in the order they run and print.
	flag.Parse()
	var cb, pb int
	fmt.Sscanf(*ports, "%d,%d", &cb, &pb)
	dir, err := os.MkdirTemp("", "etcdbench-")
	check(err)
	defer os.RemoveAll(dir)
	cl, err := cluster.Start(dir, 3, cb, pb)
	check(err)
	defer cl.Close()
	eps := cl.Endpoints()
	if *serve != "" {
		check(os.WriteFile(*serve, []byte(strings.Join(eps, ",")+"\n"), 0o644))
		if *pids != "" {
			var b strings.Builder
			for i := range cl.Members {
				fmt.Fprintln(&b, cl.Pid(i))
			}
			check(os.WriteFile(*pids, []byte(b.String()), 0o644))
		}
		io.Copy(io.Discard, os.Stdin)
		return
	}
	if *contend {
		contended(cl)
		return
	}
	if *rpccost {
		rpcCost(cl, *n)
		return
	}
	fmt.Printf("3-member etcd %s on loopback, data on %s; %d sequential iterations, %d workers × %.0fs for throughput\n\n",
		etcdVersion(cl.Etcd), dir, *n, *workers, *secs)

	b, err := etcdlock.New(etcdlock.Config{Endpoints: eps, Prefix: "/bench/etcdlock"})
	check(err)
	defer b.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps})
	check(err)
	defer cli.Close()
	env := append(os.Environ(), "WITHLOCK_ETCD_ENDPOINTS="+strings.Join(eps, ","), "ETCDCTL_API=3")
	etcdctl, _ := exec.LookPath("etcdctl")
	wl := filepath.Join(*bin, "withlock")
	locks, err := os.MkdirTemp("", "etcdbench-locks-")
	check(err)
	defer os.RemoveAll(locks)
	lenv := append(os.Environ(), "WITHLOCK_LOCK_DIR="+locks)

	// Latency cases run interleaved, one iteration of each in turn, so
	// that a machine busy with other work slows them all alike.
	type latCase struct {
		name string
		f    func(i int)
		tp   func(w, i int) // throughput: workers on distinct keys
	}
	cases := []latCase{
		{"etcdlock in-process (grant + 1 txn + revoke)",
			func(i int) { etcdlockOnce(b, fmt.Sprintf("/k%d", i%8)) },
			func(w, i int) { etcdlockOnce(b, fmt.Sprintf("/w%d", w)) }},
		{"concurrency.Mutex in-process (session + lock + unlock + close)",
			func(i int) { mutexOnce(cli, fmt.Sprintf("/bench/mutex/k%d", i%8)) },
			func(w, i int) { mutexOnce(cli, fmt.Sprintf("/bench/mutex/w%d", w)) }},
		{"`withlock --backend etcd --paths P -- true` (process)",
			func(i int) {
				runCmd(env, wl, "--backend", "etcd", "--key-prefix", "/bench/proc", "--paths", fmt.Sprintf("/srv/k%d", i%8), "--", "true")
			},
			func(w, i int) {
				runCmd(env, wl, "--backend", "etcd", "--key-prefix", "/bench/proc", "--paths", fmt.Sprintf("/srv/w%d", w), "--", "true")
			}},
		{"`withlock-etcd --paths P -- true` (process, no exec hop)",
			func(i int) {
				runCmd(env, filepath.Join(*bin, "withlock-etcd"), "--key-prefix", "/bench/proc2", "--paths", fmt.Sprintf("/srv/k%d", i%8), "--", "true")
			}, nil},
	}
	if *before != "" {
		bwl := filepath.Join(*before, "withlock")
		cases = append(cases, latCase{"`withlock --backend etcd --paths P -- true` (process, -before's build)",
			func(i int) {
				runCmd(env, bwl, "--backend", "etcd", "--key-prefix", "/bench/before", "--paths", fmt.Sprintf("/srv/k%d", i%8), "--", "true")
			}, nil})
	}
	ctlIdx := len(cases)
	if etcdctl != "" {
		cases = append(cases, latCase{"`etcdctl lock NAME true` (process)",
			func(i int) {
				runCmd(env, etcdctl, "--endpoints", strings.Join(eps, ","), "lock", fmt.Sprintf("/bench/etcdctl/k%d", i%8), "true")
			},
			func(w, i int) {
				runCmd(env, etcdctl, "--endpoints", strings.Join(eps, ","), "lock", fmt.Sprintf("/bench/etcdctl/w%d", w), "true")
			}})
	}
	for _, c := range []struct{ name, bin string }{
		{"`withlock --paths P -- true` (local flock, this tree)", "withlock"},
		{"same, withlock built without the --backend scan", "withlock-nodispatch"},
	} {
		p := filepath.Join(*bin, c.bin)
		if _, err := os.Stat(p); err == nil {
			cases = append(cases, latCase{c.name, func(i int) { runCmd(lenv, p, "--paths", "/srv/x.md", "--", "true") }, nil})
		}
	}
	fs := make([]func(int), len(cases))
	for i, c := range cases {
		fs[i] = c.f
	}
	lats := seqAll(fs)

	fmt.Println("| case | p50 | p90 | p99 | mean | throughput |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, c := range cases {
		var tp float64
		if c.tp != nil {
			tp = par(c.tp)
		}
		row(c.name, lats[i], tp)
	}
	// Contended: every worker wants the same key, and waits for it.
	row("etcdlock, all workers on one key (wait, watch hand-off)", nil, par(func(w, i int) { etcdlockWait(b, "/same") }))
	row("concurrency.Mutex, all workers on one key (FIFO queue)", nil, par(func(w, i int) { mutexOnce(cli, "/bench/mutex/same") }))
	// The same with processes, as cron would run them: issue 18's
	// contended throughput, withlock against etcdctl lock in one run. The
	// two alternate, in rounds of secs/2, so that a machine whose load
	// changes slows both alike.
	procs := []func(w, i int){func(w, i int) {
		runCmd(env, wl, "--backend", "etcd", "--key-prefix", "/bench/proc", "--wait", "1m", "--paths", "/srv/same", "--", "true")
	}}
	if etcdctl != "" {
		procs = append(procs, func(w, i int) {
			runCmd(env, etcdctl, "--endpoints", strings.Join(eps, ","), "lock", "/bench/etcdctl/same", "true")
		})
	}
	tps := make([]float64, len(procs))
	const rounds = 4
	for range rounds {
		for i, f := range procs {
			tps[i] += parFor(*secs/2, f) / rounds
		}
	}
	row("`withlock --backend etcd --wait 1m --paths P -- true`, all workers on one key (processes)", nil, tps[0])
	if etcdctl != "" {
		row("`etcdctl lock NAME true`, all workers on one key (processes)", nil, tps[1])
		fmt.Printf("\nwithlock / etcdctl: p50 %.2f×, contended throughput %.2f×\n", ratio(lats[2], lats[ctlIdx]), tps[0]/tps[1])
		fmt.Printf("withlock-etcd directly / etcdctl: p50 %.2f×\n", ratio(lats[3], lats[ctlIdx]))
		if *before != "" {
			fmt.Printf("-before's withlock / etcdctl: p50 %.2f×; this tree / -before: p50 %.2f×\n", ratio(lats[4], lats[ctlIdx]), ratio(lats[2], lats[4]))
		}
	}
}

// ratio is the ratio of the medians of a and b.
func ratio(a, b []time.Duration) float64 {
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2])
	}
	return med(a) / med(b)
}

func etcdVersion(etcd string) string {
	out, _ := exec.Command(etcd, "--version").Output()
	f := strings.Fields(string(out))
	if len(f) >= 3 {
		return f[2]
	}
	return "?"
}

func etcdlockOnce(b *etcdlock.Backend, path string) {
	c, err := b.Open(lockset.Request{Paths: []string{path}})
	check(err)
	h, err := c.TryAcquire()
	check(err)
	h.Release()
	c.Close()
}

func etcdlockWait(b *etcdlock.Backend, path string) {
	c, err := b.Open(lockset.Request{Paths: []string{path}})
	check(err)
	h, err := lockset.Acquire(context.Background(), c, time.Minute)
	check(err)
	h.Release()
	c.Close()
}

func mutexOnce(cli *clientv3.Client, key string) {
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	check(err)
	m := concurrency.NewMutex(s, key)
	check(m.Lock(context.Background()))
	check(m.Unlock(context.Background()))
	check(s.Close())
}

func runCmd(env []string, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %q: %v\n%s", name, args, err, out)
		os.Exit(1)
	}
}

// seqAll runs each f in turn, n rounds (after a few warm-up rounds), and
// returns each one's durations.
func seqAll(fs []func(i int)) [][]time.Duration {
	for i := 0; i < 5; i++ {
		for _, f := range fs {
			f(i)
		}
	}
	d := make([][]time.Duration, len(fs))
	for i := 0; i < *n; i++ {
		for j, f := range fs {
			t := time.Now()
			f(i)
			d[j] = append(d[j], time.Since(t))
		}
	}
	return d
}

// par runs f in workers goroutines for secs seconds and returns operations
// per second.
func par(f func(w, i int)) float64 { return parFor(*secs, f) }

// parFor is par for secs seconds.
func parFor(secs float64, f func(w, i int)) float64 {
	ops, d := parForN(secs, f)
	return float64(ops) / d.Seconds()
}

// parForN runs f in workers goroutines for secs seconds and returns the
// number of operations and the time they took.
func parForN(secs float64, f func(w, i int)) (int64, time.Duration) {
	var ops atomic.Int64
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				f(w, i)
				ops.Add(1)
			}
		}(w)
	}
	wg.Wait()
	return ops.Load(), time.Since(start)
}

func row(name string, lat []time.Duration, tp float64) {
	cell := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
	p50, p90, p99, mean := "–", "–", "–", "–"
	if len(lat) > 0 {
		s := slices.Clone(lat)
		slices.Sort(s)
		q := func(p float64) time.Duration { return s[int(math.Min(float64(len(s)-1), p*float64(len(s))))] }
		var sum time.Duration
		for _, d := range s {
			sum += d
		}
		p50, p90, p99, mean = cell(q(0.5)), cell(q(0.9)), cell(q(0.99)), cell(sum/time.Duration(len(s)))
	}
	t := "–"
	if tp > 0 {
		t = fmt.Sprintf("%.0f/s", tp)
	}
	fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", name, p50, p90, p99, mean, t)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbench:", err)
		os.Exit(1)
	}
}

// contended times every worker on one key, as processes: withlock
// --backend etcd --wait (this tree's, and -before's if given) against
// etcdctl lock, in alternating rounds of secs/2 each. It also reports
// the CPU each cycle (one process's lock, run and release) cost the
// contenders, the etcd members and the whole machine: with every CPU
// busy, throughput is the machine's CPU over a cycle's.
func contended(cl *cluster.Cluster) {
	eps := cl.Endpoints()
	env := append(os.Environ(), "WITHLOCK_ETCD_ENDPOINTS="+strings.Join(eps, ","), "ETCDCTL_API=3")
	etcdctl, err := exec.LookPath("etcdctl")
	check(err)
	type contender struct {
		name string
		f    func(w, i int)
	}
	wl := func(dir, prefix string) func(w, i int) {
		return func(w, i int) {
			runCmd(env, filepath.Join(dir, "withlock"), "--backend", "etcd", "--key-prefix", prefix, "--wait", "1m", "--paths", "/srv/same", "--", "true")
		}
	}
	cs := []contender{{"withlock --backend etcd --wait 1m (this tree)", wl(*bin, "/bench/after")}}
	if *before != "" {
		cs = append(cs, contender{"withlock --backend etcd --wait 1m (before)", wl(*before, "/bench/before")})
	}
	cs = append(cs, contender{"etcdctl lock NAME true", func(w, i int) {
		runCmd(env, etcdctl, "--endpoints", strings.Join(eps, ","), "lock", "/bench/etcdctl/same", "true")
	}})
	meter := cpuMeter{cl}
	uses := make([]cpuUse, len(cs))
	rpcs := make([]rpcCounts, len(cs))
	for r := range *rounds {
		for i, c := range cs {
			ra := readRPCs(cl)
			a := meter.mark()
			ops, d := parForN(*secs/2, c.f)
			uses[i].add(a, meter.mark(), ops)
			rb := readRPCs(cl)
			// Each case's own rounds, added up (the other cases'
			// requests fall between them).
			rpcs[i] = addRPCs(rpcs[i], ra, rb)
			fmt.Fprintf(os.Stderr, "round %d: %s %.1f/s\n", r, c.name, float64(ops)/d.Seconds())
		}
	}
	tp := func(u cpuUse) float64 { return u.ops / u.wall.Seconds() }
	e := uses[len(uses)-1]
	fmt.Printf("| %d workers on one key, processes (%d alternating rounds of %.1f s) | throughput | ÷ etcdctl lock | CPU per cycle: the contenders | etcd (3 members) | whole machine | machine busy |\n", *workers, *rounds, *secs/2)
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for i, c := range cs {
		u := uses[i]
		fmt.Printf("| %s | %.1f/s | %.2f× | %.1f ms | %.1f ms | %.1f ms | %.0f%% |\n", c.name, tp(u), tp(u)/tp(e),
			u.per(u.children), u.per(u.etcd), u.per(u.machine), 100*u.busy(runtime.NumCPU()))
	}
	fmt.Println("\nrequests per cycle (the members' grpc_server_started_total and etcd_server_proposals_committed_total):")
	for i, c := range cs {
		fmt.Printf("  %s: %s\n", c.name, perCycle(rpcs[i], uses[i].ops))
	}
	// What starting the binaries (and the command) costs, without a
	// single request: the part of a cycle's contender CPU that no
	// protocol changes.
	start := cpuPerCall(env, 100, filepath.Join(*bin, "withlock"), "--backend", "etcd", "--version") + cpuPerCall(env, 100, "true")
	ctlStart := cpuPerCall(env, 100, etcdctl, "version") + cpuPerCall(env, 100, "true")
	fmt.Printf("\nstart-up only (no request), CPU per call: withlock --backend etcd --version + true %.1f ms; etcdctl version + true %.1f ms\n", start, ctlStart)
}

// cpuPerCall runs name n times in a row and returns the CPU each run
// cost (user + system, ms).
func cpuPerCall(env []string, n int, name string, args ...string) float64 {
	var a, b syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &a)
	for range n {
		runCmd(env, name, args...)
	}
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &b)
	return float64(tv(b.Utime)+tv(b.Stime)-tv(a.Utime)-tv(a.Stime)) / 1e6 / float64(n)
}
