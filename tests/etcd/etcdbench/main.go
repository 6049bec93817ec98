//go:build linux

// Command etcdbench measures the etcd backend against a 3-member loopback
// cluster it starts itself, next to the two usual ways of locking with
// etcd, in the same run: `etcdctl lock` and the client's concurrency.Mutex
// recipe (session + mutex). Run it through tests/etcd/bench.sh, which builds
// the binaries it times.
//
//	etcdbench -bin DIR [-n 300] [-secs 3] [-workers 8]
//
// DIR holds withlock, withlock-etcd and withlock-nodispatch (withlock
// built without the --backend scan, to show the local path's cost).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
)

func main() {
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
		fmt.Printf("\nwithlock / etcdctl: p50 %.2f×, contended throughput %.2f×\n", ratio(lats[2], lats[4]), tps[0]/tps[1])
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
	return float64(ops.Load()) / time.Since(start).Seconds()
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
