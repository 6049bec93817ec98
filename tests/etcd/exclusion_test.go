//go:build etcd

package etcd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The checker works: a critical section entered while a marker exists is
// reported, whichever host's path reaches the post (the marker is keyed on
// the post as the worker resolves it, not on what withlock says), and a
// WITHLOCK_KEY_PATHS that is not the posts' relative paths is reported too
// (negative control for the tests below).
func TestCheckerDetectsOverlap(t *testing.T) {
	need(t)
	roots, _ := hosts(t, []string{"ko/post.md"})
	check := func(keyPaths, root string, want string) {
		t.Helper()
		mark := t.TempDir()
		os.WriteFile(filepath.Join(mark, "post-"+pathHash("ko/post.md")), nil, 0o644)
		cmd := exec.Command(self, "--", root, root+"/ko/../ko/post.md")
		cmd.Env = append(os.Environ(), "ETCDTEST_WORKER=1", "ETCDTEST_MARK="+mark, "WITHLOCK_KEY_PATHS="+keyPaths)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("worker: %v %s", err, out)
		}
		v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS"))
		if !strings.Contains(string(v), want) {
			t.Errorf("root %s, WITHLOCK_KEY_PATHS=%s: checker missed %q; VIOLATIONS=%q", root, keyPaths, want, v)
		}
	}
	for _, root := range roots {
		check(`["ko/post.md"]`, root, "overlap on post-")
	}
	check(`["ko/../ko/post.md"]`, roots[2], "withlock says it locked")
}

func pathHash(rel string) string { return pathKey("", rel)[len("/paths/"):][:16] }

// hosts builds one tree seen by three "hosts" at three places: hostA has
// it at A/tree; hostB at B/mnt/blog (a bind mount of the same directory
// where the test may mount, else an identical copy of its layout: the keys
// are the same either way, which is the point); hostC through a symlink
// (C/blog -> A/tree), whose key root is canonicalised like the paths.
func hosts(t *testing.T, files []string) (roots []string, bound bool) {
	root := t.TempDir()
	a := filepath.Join(root, "A/tree")
	b := filepath.Join(root, "B/mnt/blog")
	for _, d := range []string{a, b, filepath.Join(root, "C")} {
		os.MkdirAll(d, 0o755)
	}
	for _, f := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(a, f)), 0o755)
		os.WriteFile(filepath.Join(a, f), []byte("x"), 0o644)
	}
	if exec.Command("mount", "--bind", a, b).Run() == nil {
		bound = true
		t.Cleanup(func() { exec.Command("umount", b).Run() })
	} else {
		for _, f := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(b, f)), 0o755)
			os.WriteFile(filepath.Join(b, f), []byte("x"), 0o644)
		}
	}
	os.Symlink(a, filepath.Join(root, "C/blog"))
	return []string{a, b, filepath.Join(root, "C/blog")}, bound
}

// Withlock processes on three "hosts" — three different key roots and
// local paths for one tree — take random overlapping sets of its files;
// every critical section claims a marker per post (its path relative to
// the tree, as the worker resolves it), so two holders of one file at once
// would be recorded. Each host also takes one
// of 2 slots of a shared pool.
func TestExclusionAcrossKeyRoots(t *testing.T) {
	need(t)
	p := prefix(t)
	var files []string
	for i := 0; i < 8; i++ {
		files = append(files, fmt.Sprintf("%s/post%d.md", []string{"ko", "en"}[i%2], i))
	}
	roots, bound := hosts(t, files)
	t.Logf("hosts: %v (bind mount: %v)", roots, bound)
	mark := t.TempDir()
	// The load runs until it has proved something (30 critical sections
	// and some contention), however slow the machine; 2 minutes bound it.
	hang := time.Now().Add(2 * time.Minute)
	var mu sync.Mutex
	codes := map[int]int{}
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return progress(mark) >= 30 && codes[75] > 0 || time.Now().After(hang)
	}
	var wg sync.WaitGroup
	for h, root := range roots {
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(h int, root string) {
				defer wg.Done()
				for !enough() {
					var paths []string
					for _, i := range rand.Perm(len(files))[:1+rand.IntN(3)] {
						// Each host names the file its own way: relative
						// to its root here, sometimes through "..".
						pth := filepath.Join(root, files[i])
						if rand.IntN(2) == 0 {
							pth = root + "/" + filepath.Dir(files[i]) + "/../" + files[i]
						}
						paths = append(paths, pth)
					}
					args := []string{"--backend", "etcd", "--key-prefix", p, "--key-root", root,
						"--slots", "2", "--slot-file", "/shared/pool-{i}",
						"--paths", strings.Join(paths, ","), "--", self, "pool:2", "--", root}
					args = append(args, paths...)
					r := run(t, []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark, "ETCDTEST_HOLD=5ms"}, "withlock", args...)
					mu.Lock()
					codes[r.code]++
					mu.Unlock()
					if r.code != 0 && r.code != 75 {
						t.Errorf("host %d: exit %d: %s", h, r.code, r.stderr)
						return
					}
				}
			}(h, root)
		}
	}
	wg.Wait()
	n := checkMarks(t, mark)
	t.Logf("%d critical sections checked across 3 key roots, exits %v, at most %d in the pool at once", n, codes, maxInside(t, mark, "pool"))
	if n < 30 || codes[75] == 0 {
		t.Errorf("too little contention to prove anything after 2 minutes: %d runs, exits %v", n, codes)
	}
	if m := maxInside(t, mark, "pool"); m > 2 {
		t.Errorf("%d holders in a pool of 2", m)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left: %v", k)
	}
}

// At most N holders per pool of N, under contention from many processes;
// the cap is reached (N slot keys at once in etcd); slot indices are below
// N. Checked for a pool small enough for one transaction (3) and one
// large enough to be read first (40, more than the 32 slots chained in one
// transaction), whose holders hold 3 s so that all 40 are in at once
// however slowly 48 processes start on 2 cores.
func TestSlotCap(t *testing.T) {
	need(t)
	for _, c := range []struct {
		size, workers int
		hold          string
	}{{3, 10, "300ms"}, {40, 48, "3s"}} {
		t.Run(fmt.Sprintf("pool%d", c.size), func(t *testing.T) {
			p := prefix(t)
			mark := t.TempDir()
			// The pool's keys in etcd, sampled: how many slots were
			// held at once (the cap reached: the pool was full; a
			// worker's own count of the holders inside lags behind, as
			// each one starts up after taking its slot).
			cli, err := cl.Client()
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			var held atomic.Int64
			sampling, sampled := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-sampling:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					resp, err := cli.Get(ctx, p+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
					cancel()
					if err == nil && resp.Count > held.Load() {
						held.Store(resp.Count)
					}
					time.Sleep(5 * time.Millisecond) // the sampling rate
				}
			}()
			// The load runs until the pool was full, a process was
			// turned away and every slot turned over about twice,
			// however slow the machine; 2 minutes bound it.
			hang := time.Now().Add(2 * time.Minute)
			var mu sync.Mutex
			codes := map[int]int{}
			enough := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return held.Load() >= int64(c.size) && codes[75] > 0 && progress(mark) >= 2*c.size || time.Now().After(hang)
			}
			var wg sync.WaitGroup
			for w := 0; w < c.workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !enough() {
						r := run(t, []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark, "ETCDTEST_HOLD=" + c.hold}, "withlock-etcd",
							"--key-prefix", p, "--slots", fmt.Sprint(c.size), "--slot-file", "/tmp/cap-{i}.lock", "--", self, fmt.Sprintf("cap:%d", c.size))
						mu.Lock()
						codes[r.code]++
						mu.Unlock()
						// 125 "etcd unavailable" with nothing run, and
						// 70 "lost the etcd lease" (the command
						// stopped), are the honest answers of a
						// cluster too slow for its bounds, as 48
						// processes and 3 members on 2 loaded cores
						// sometimes are: not a cap broken (the marks
						// and the keys say that), so they only pace
						// the worker.
						overloaded := r.code == 125 && strings.Contains(r.stderr, "etcd unavailable") && strings.Contains(r.stderr, "the command did not run") ||
							r.code == 70 && strings.Contains(r.stderr, "lost the etcd lease")
						if r.code != 0 && r.code != 75 && !overloaded {
							t.Errorf("exit %d: %s", r.code, r.stderr)
							return
						}
						if r.code != 0 {
							time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond) // back-off pacing the load, not a wait
						}
					}
				}()
			}
			wg.Wait()
			close(sampling)
			<-sampled
			n := checkMarks(t, mark)
			m := maxInside(t, mark, "cap")
			t.Logf("pool of %d, %d processes: %d critical sections, exits %v (125: etcd unavailable within the bound, nothing run; 70: the lease lost), at most %d slots held and %d holders inside at once", c.size, c.workers, n, codes, held.Load(), m)
			if m > c.size || held.Load() > int64(c.size) {
				t.Errorf("%d holders inside, %d slots held at once, in a pool of %d", m, held.Load(), c.size)
			}
			if held.Load() < int64(c.size) || codes[75] == 0 || n < 2*c.size {
				t.Errorf("no contention at the cap after 2 minutes: at most %d of %d slots held, exits %v", held.Load(), c.size, codes)
			}
		})
	}
}

// A set too large for one transaction (300 paths and a pool) is taken in
// several under one lease: still all or nothing, and a busy attempt leaves
// no key behind.
func TestLargeSet(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 300; i++ {
		paths = append(paths, fmt.Sprintf("/srv/big/%03d.md", i))
	}
	list := filepath.Join(dir, "list")
	os.WriteFile(list, []byte(strings.Join(paths, "\n")), 0o644)
	// Hold the path whose key sorts last: the set takes its keys in key
	// order, and the read before the transaction (precheck) covers only
	// the first transaction's worth, so this one is found busy by the
	// lock transaction's own compare (create_revision == 0), the one
	// that excludes two holders racing past the read.
	last := paths[0]
	for _, pth := range paths {
		if pathKey(p, strings.TrimPrefix(pth, "/")) > pathKey(p, strings.TrimPrefix(last, "/")) {
			last = pth
		}
	}
	release := filepath.Join(dir, "release")
	h := command(nil, "withlock-etcd", "--key-prefix", p, "--paths", last, "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)
	h.Start()
	defer func() { h.Process.Kill(); h.Wait() }()
	waitFor(t, 10*time.Second, "the holder", func() bool { return len(keys(t, p)) == 1 })

	r := run(t, nil, "withlock-etcd", "-v", "--key-prefix", p, "--paths-from", list, "--slots", "2", "--", "true")
	if r.code != 75 || !strings.Contains(r.stderr, filepath.Base(last)+" is busy") {
		t.Fatalf("a set of 300 with %s held: exit %d: %s", last, r.code, r.stderr)
	}
	if k := keys(t, p); len(k) != 1 {
		t.Fatalf("a busy attempt left %d keys (want only the holder's)", len(k))
	}
	os.WriteFile(release, nil, 0o644)
	h.Wait()
	r = run(t, nil, "withlock-etcd", "--key-prefix", p, "--paths-from", list, "--slots", "2", "--", "sh", "-c", `echo "$WITHLOCK_KEY_PATHS" | tr , '\n' | wc -l`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "300" {
		t.Fatalf("exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}
	if k := keys(t, p); len(k) != 0 {
		t.Fatalf("%d keys left after release", len(k))
	}
}
