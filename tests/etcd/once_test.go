//go:build etcd

package etcd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/etcdpause"
	"github.com/crongate/crongate/internal/safetext"
)

// onceHost is one "host" of the once_per tests: its own state dir and
// its own connection to the cluster.
type onceHost struct {
	name string
	cfg  *gate.Config
	ps   gate.Pauses
}

func newOnceHost(t *testing.T, name string) *onceHost {
	t.Helper()
	cfg := gate.DefaultConfig()
	cfg.StateDir = filepath.Join(t.TempDir(), name)
	cfg.Etcd.Endpoints = cl.Endpoints()
	cfg.Etcd.Prefix = prefix(t)
	cfg.Etcd.Timeout = 5 * time.Second
	cfg.Gates["slot"] = &gate.GateConfig{Name: "slot", OncePer: gate.OnceSlot}
	cfg.Gates["hourly"] = &gate.GateConfig{Name: "hourly", OncePer: gate.OnceHour}
	s, err := etcdpause.Open(etcdpause.Config{Endpoints: cfg.Etcd.Endpoints, Prefix: cfg.Etcd.Prefix, Timeout: cfg.Etcd.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &onceHost{name: name, cfg: cfg, ps: gate.Pauses{Shared: s, Claims: s}}
}

// run calls the gate as cron would at the tick at (the clock reads at,
// then advances 1 ms a reading); the command records the run in log
// with the tick's period, and fails the test's check if another runs.
func (h *onceHost) run(t *testing.T, name string, at time.Time, dir string) int {
	var errb bytes.Buffer
	clock := at
	var mu sync.Mutex
	p, _ := gate.PeriodOf(h.cfg.Gates[name].OncePer, at, time.UTC)
	script := `mkdir "$1/running-$2" 2>/dev/null || { echo "$3 $4" >> "$1/overlap"; exit 1; }
echo "$3 $4" >> "$1/runs-$2"; sleep 0.05; rmdir "$1/running-$2"`
	return gate.Run(gate.Invocation{
		Gate: name, Argv: []string{"sh", "-c", script, "sh", dir, name, p.Start.UTC().Format("15:04"), h.name},
		Config: h.cfg, Pauses: h.ps, Out: &safetext.Printer{Prog: "cron-gate", W: &errb}, Sigs: make(chan os.Signal),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Millisecond); return clock },
	})
}

// 3 hosts × 20 ticks of a slot gate (every minute: 20 periods) and of a
// 1h gate (every 10 minutes: 4 periods), all three hosts called at every
// tick at once, on a short clock: each period runs exactly once, on
// whichever host claims it, and never two at once. Fails without the
// cluster's claims (each host runs every period: 3 runs each).
func TestOncePerAcrossHosts(t *testing.T) {
	need(t)
	dir := t.TempDir()
	hosts := []*onceHost{newOnceHost(t, "a"), newOnceHost(t, "b"), newOnceHost(t, "c")}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for tick := 0; tick < 20; tick++ {
		var wg sync.WaitGroup
		for _, h := range hosts {
			for _, g := range []struct {
				name string
				at   time.Time
			}{{"slot", t0.Add(time.Duration(tick) * time.Minute)}, {"hourly", t0.Add(time.Duration(tick) * 10 * time.Minute)}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if code := h.run(t, g.name, g.at, dir); code != 0 && code != gate.DefaultSkipCode {
						t.Errorf("host %s, gate %s, tick %d: exit %d", h.name, g.name, tick, code)
					}
				}()
			}
		}
		wg.Wait()
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlap")); err == nil {
		t.Fatalf("two runs at once: %s", b)
	}
	for _, c := range []struct {
		gate    string
		periods int
	}{{"slot", 20}, {"hourly", 4}} {
		b, err := os.ReadFile(filepath.Join(dir, "runs-"+c.gate))
		if err != nil {
			t.Fatal(err)
		}
		per := map[string][]string{}
		byHost := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			per[f[0]] = append(per[f[0]], f[1])
			byHost[f[1]]++
		}
		var bad []string
		for p, hs := range per {
			if len(hs) != 1 {
				bad = append(bad, fmt.Sprintf("%s: %v", p, hs))
			}
		}
		sort.Strings(bad)
		if len(per) != c.periods || len(bad) > 0 {
			t.Fatalf("gate %s: %d periods run (want %d), runs per period not 1: %v", c.gate, len(per), c.periods, bad)
		}
		t.Logf("gate %s: %d periods, 1 run each, never two at once; runs by host %v", c.gate, len(per), byHost)
	}
}

// onceBinHost is a host running the real binaries with once_per = "1d".
func onceBinHost(t *testing.T, root, name string) (config, cache string) {
	t.Helper()
	dir := filepath.Join(root, name)
	cache = filepath.Join(dir, "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	eps := make([]string, 0, 3)
	for _, e := range cl.Endpoints() {
		eps = append(eps, fmt.Sprintf("%q", e))
	}
	config = filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("state_dir = %q\n\n[etcd]\nendpoints = [%s]\nprefix = %q\ntimeout = \"2s\"\n\n[gates.daily]\nonce_per = \"1d\"\n",
		filepath.Join(dir, "state"), strings.Join(eps, ", "), prefix(t))
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return config, cache
}

// The claiming host dies (SIGKILL to cron-gate and its command, as when
// the machine goes): while its claim's lease lives, the others skip
// (claimed); once it expires (gate.ClaimTTL), another host runs the
// period, and the third then finds it done. Never two at once: the
// first host's command is dead before the second's starts.
func TestOncePerClaimerKilled(t *testing.T) {
	need(t)
	root := t.TempDir()
	marks := filepath.Join(root, "marks")
	os.MkdirAll(marks, 0o755)
	cfgA, cacheA := onceBinHost(t, root, "a")
	cfgB, cacheB := onceBinHost(t, root, "b")
	cfgC, cacheC := onceBinHost(t, root, "c")

	a, done := startHostA(t, cfgA, cacheA, marks, "exec sleep 600", nil)
	r := run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheB}, "cron-gate", "-v", "--config", cfgB, "daily", "--", "touch", marks+"/b-ran")
	if r.code != gate.DefaultSkipCode || !strings.Contains(r.stderr, "is claimed by run") {
		t.Fatalf("host b while a runs: exit %d, %s", r.code, r.stderr)
	}
	// Host a dies: cron-gate and its command.
	syscall.Kill(-a.Process.Pid, syscall.SIGKILL)
	<-done
	killed := time.Now()
	waitFor(t, 30*time.Second, "host a's command to be gone", func() bool {
		return syscall.Kill(-a.Process.Pid, 0) == syscall.ESRCH
	})
	// Host b retries, as its next ticks would, until the period is free.
	var ranAt time.Time
	waitFor(t, 2*gate.ClaimTTL+20*time.Second, "host b to run the period once a's claim expired", func() bool {
		r := run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheB}, "cron-gate", "--config", cfgB, "daily", "--", "touch", marks+"/b-ran")
		if r.code == 0 {
			ranAt = time.Now()
			return true
		}
		if r.code != gate.DefaultSkipCode {
			t.Fatalf("host b: exit %d: %s", r.code, r.stderr)
		}
		return false
	})
	t.Logf("host b ran the period %v after host a died (claim lease %v)", ranAt.Sub(killed).Round(100*time.Millisecond), gate.ClaimTTL)
	r = run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheC}, "cron-gate", "-v", "--config", cfgC, "daily", "--", "touch", marks+"/c-ran")
	if r.code != gate.DefaultSkipCode || !strings.Contains(r.stderr, "is done by run") {
		t.Fatalf("host c after b's success: exit %d, %s", r.code, r.stderr)
	}
}

// A claim survives members cut off from its host (connections left
// hanging, as a dropped route or a frozen host leaves them): first two of
// the three for 12 s, then the third for 12 s, so that whichever member
// the claim started on is cut once. Its renewals go to a member it can
// still reach, its command runs to the end, and another host skips
// throughout. With the client's own keep-alive stream, which stayed on
// the member it started on until gRPC noticed it gone, the claim was lost
// at the first cut of that member, and the other host ran the period
// while the first still did.
func TestOncePerSurvivesCutMembers(t *testing.T) {
	need(t)
	root := t.TempDir()
	marks := filepath.Join(root, "marks")
	os.MkdirAll(marks, 0o755)
	pt := newPartition(t)
	cfgA, cacheA := onceBinHost(t, root, "a")
	body, err := os.ReadFile(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]string, 0, 3)
	for _, e := range strings.Split(pt.Endpoints(), ",") {
		eps = append(eps, fmt.Sprintf("%q", e))
	}
	body = []byte(strings.Replace(string(body), "endpoints = [", "endpoints = ["+strings.Join(eps, ", ")+"] # through the proxy\n# [", 1))
	if err := os.WriteFile(cfgA, body, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgB, cacheB := onceBinHost(t, root, "b")

	var aErr strings.Builder
	a, done := startHostA(t, cfgA, cacheA, marks, "sleep 28; touch "+marks+"/a-done", &aErr)
	tries := 0
	for _, cut := range [][]int{{0, 1}, {2}} {
		for _, i := range cut {
			pt.CutMember(i)
		}
		since := time.Now()
		for time.Since(since) < 12*time.Second {
			r := run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheB}, "cron-gate", "--config", cfgB, "daily", "--", "touch", marks+"/b-ran")
			if r.code != gate.DefaultSkipCode {
				t.Fatalf("host b %v after members %v were cut from host a: exit %d (want %d: a holds the period): %s",
					time.Since(since).Round(time.Millisecond), cut, r.code, gate.DefaultSkipCode, r.stderr)
			}
			tries++
			time.Sleep(300 * time.Millisecond) // pacing, as cron's ticks would be
		}
		for _, i := range cut {
			pt.HealMember(i)
		}
	}
	err = <-done
	if code := exitCode(a, err); code != 0 {
		t.Fatalf("host a exited %d, want 0 (its claim kept through the cuts): %s", code, aErr.String())
	}
	if _, err := os.Stat(filepath.Join(marks, "a-done")); err != nil {
		t.Fatal("host a's command did not run to its end")
	}
	t.Logf("host b skipped %d times during the cuts", tries)
}

// startHostA starts host a's run of the daily gate, its command script
// in its own process group, and waits until the command has started (it
// touches MARKS/a-started first). done gets Wait's error.
func startHostA(t *testing.T, cfg, cache, marks, script string, stderr io.Writer) (*exec.Cmd, <-chan error) {
	t.Helper()
	a := command([]string{"CRON_GATE_CACHE_DIR=" + cache}, "cron-gate", "--config", cfg, "daily", "--",
		"sh", "-c", "touch "+marks+"/a-started; "+script)
	a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	a.Stderr = stderr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait() }()
	waitFor(t, 30*time.Second, "host a's command to start", func() bool {
		_, err := os.Stat(filepath.Join(marks, "a-started"))
		return err == nil
	})
	return a, done
}
