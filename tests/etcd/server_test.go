//go:build etcd

package etcd

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/etcd/cluster"
)

// The tests of this file each start a cluster of their own with server
// flags that the suite's cluster leaves at their defaults (issue 33, item
// 4): short auth tokens, a long keepalive minimum, a small request limit,
// TLS that requires client certificates. Their members take the client and
// peer ports from +6 on (the suite's cluster has +0..+2, TestTLSAndAuth's
// member +5); one test at a time, each closes its cluster when it ends.
const serverOffset = 6

// startServer starts a cluster of n members with opt for the test and
// closes it when the test ends (with the members' logs on a failure).
func startServer(t *testing.T, n int, opt cluster.Options) *cluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	c, err := cluster.StartWith(dir, n, clientBase+serverOffset, peerBase+serverOffset, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test's etcd members:\n%s", c.Logs(20))
		}
		c.Close()
	})
	return c
}

// complaints are stderr's lines less the warning that a member is older
// than the minimum safe version (Debian's 3.4.23 is).
func complaints(stderr string) []string {
	var out []string
	for l := range strings.Lines(stderr) {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "is older than") {
			out = append(out, l)
		}
	}
	return out
}

// writeSecret writes a 0600 file of the test's and returns its name.
func writeSecret(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// call is a binary started in the background by startCall.
type call struct {
	cmd       *exec.Cmd
	out, errb strings.Builder
	until     string        // startHolder's: the file that ends the hold
	done      chan struct{} // closed when it has exited
}

// startCall starts bin from binDir (as command does) and kills it when the
// test ends if it still runs.
func startCall(t *testing.T, env []string, bin string, args ...string) *call {
	t.Helper()
	h := &call{cmd: command(env, bin, args...), done: make(chan struct{})}
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.errb
	// A killed call's command may keep its output open: Wait gives up on
	// it after this long.
	h.cmd.WaitDelay = 5 * time.Second
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		if !h.exited() {
			if h.until != "" {
				os.WriteFile(h.until, nil, 0o644) // the command ends too
			}
			h.cmd.Process.Kill()
			<-h.done
		}
	})
	return h
}

// startHolder starts bin holding the locks of args (flags, without "--")
// until the file release exists (h.release), then printing "held". The
// file's name is in the command's environment, not its arguments, which
// every key's value names.
func startHolder(t *testing.T, bin string, args []string, release string) *call {
	t.Helper()
	h := startCall(t, []string{"HOLD_UNTIL=" + release}, bin, append(args, "--", "sh", "-c", `while [ ! -e "$HOLD_UNTIL" ]; do sleep 0.05; done; echo held`)...)
	h.until = release
	return h
}

func (h *call) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// release makes a holder's command end.
func (h *call) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(h.until, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wait waits at most d for the call to exit and returns its exit code.
func (h *call) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-h.done:
		return exitCode(h.cmd, nil)
	case <-time.After(d):
		t.Fatalf("%s did not exit within %v: %q", filepath.Base(h.cmd.Path), d, h.errb.String())
		return -1
	}
}

// Simple auth tokens of 2 s (--auth-token-ttl 2) expire between the
// requests of a call that holds its locks longer, and then the call logs
// in again. 300 calls on four paths at once, every tenth holding 2.5 s or
// 4 s (past the TTL and the server's 1 s expiry tick), half through
// withlock --backend etcd, half through withlock-etcd, the password from a
// 0600 file: every call exits 0 and runs its command. A holder of 9 s
// (its renewals and its release past two token lifetimes, and more than
// the 7.5 s without a renewal that stops a command) exits 0 too, and so
// does a --wait waiter queued behind it.
func TestAuthTokenExpiry(t *testing.T) {
	need(t)
	p := prefix(t)
	sc := startServer(t, 3, cluster.Options{ExtraArgs: []string{"--auth-token", "simple", "--auth-token-ttl", "2"}})
	const password = "t0ken-p4ss"
	enableAuth(t, sc, p, password)
	base := []string{"--endpoints", sc.EndpointList(), "--key-prefix", p, "--etcd-user", "locker", "--password-file", writeSecret(t, "password", password+"\n")}
	call := func(i int, path, cmd string) result {
		bin, args := "withlock-etcd", base
		if i%2 == 1 {
			bin, args = "withlock", append([]string{"--backend", "etcd"}, base...)
		}
		return run(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, bin, append(args, "--paths", path, "--", "sh", "-c", cmd)...)
	}

	// The test's reads log in anew each time: etcd's client (v3.6 on)
	// cannot log in again on 3.4 once its token lapsed (auth.go).
	keys := func() map[string]int64 {
		cli, err := sc.ClientAs("locker", password)
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		return keysOf(t, cli, p)
	}
	long := make(chan result, 1)
	go func() { long <- call(0, "/srv/token/long", "sleep 9; echo ran") }()
	waitFor(t, 15*time.Second, "the holder of 9 s's key", func() bool { return len(keys()) == 1 })
	// A waiter behind it: its watch and its reads span token lifetimes.
	waiter := make(chan result, 1)
	go func() {
		waiter <- run(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, "withlock-etcd", append(base, "--wait", "60s", "--paths", "/srv/token/long", "--", "echo", "waited")...)
	}()

	const calls, workers = 300, 4
	start := time.Now()
	var mu sync.Mutex
	var failed []string
	slow := 0
	var short []time.Duration // how long the calls that did not sleep took
	kinds := map[string]int{} // the failures by exit code and message
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range calls / workers {
				i := w*calls/workers + k
				cmd := "echo ran"
				if k%10 == 9 {
					cmd = fmt.Sprintf("sleep %s; echo ran", []string{"2.5", "4"}[k/10%2])
				}
				r := call(i, fmt.Sprintf("/srv/token/w%d", w), cmd)
				mu.Lock()
				if k%10 == 9 {
					slow++
				} else {
					short = append(short, r.dur)
				}
				if r.code != 0 || r.stdout != "ran\n" || len(complaints(r.stderr)) > 0 {
					failed = append(failed, fmt.Sprintf("call %d (%s): exit %d, stdout %q, stderr %q", i, cmd, r.code, r.stdout, r.stderr))
					kinds[fmt.Sprintf("exit %d, invalid auth token: %v", r.code, strings.Contains(r.stderr, "invalid auth token"))]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(short)
	t.Logf("%d calls (%d holding past the token TTL) by %d at once in %v: %d failed; the others took %v (median), %v (90th percentile), %v (longest)",
		calls, slow, workers, el.Round(time.Millisecond), len(failed), short[len(short)/2].Round(time.Millisecond), short[len(short)*9/10].Round(time.Millisecond), short[len(short)-1].Round(time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("the failures by kind (a release refused leaves the keys to expire with the lease: the calls after it on that path are busy, exit 75): %v", kinds)
	}
	for i, f := range failed {
		if i == 10 {
			t.Errorf("... and %d more", len(failed)-10)
			break
		}
		t.Error(f)
	}
	r := <-long
	if r.code != 0 || r.stdout != "ran\n" || len(complaints(r.stderr)) > 0 {
		t.Errorf("the holder of 9 s: exit %d, stdout %q, stderr %q; want 0, ran, no complaint", r.code, r.stdout, r.stderr)
	}
	if r := <-waiter; r.code != 0 || r.stdout != "waited\n" || len(complaints(r.stderr)) > 0 {
		t.Errorf("the waiter behind it: exit %d, stdout %q, stderr %q; want 0, waited, no complaint", r.code, r.stdout, r.stderr)
	}
	if k := keys(); len(k) != 0 {
		t.Errorf("%d keys left under %s after every call ended: %v", len(k), p, k)
	}
}

// A member started with --grpc-keepalive-min-time 30s answers with GOAWAY
// (ENHANCE_YOUR_CALM, too_many_pings) a client that pings it more often
// than every 30 s three times over with nothing sent by the member in
// between. A holder and a --wait waiter, both with a TTL of 60 s (a
// renewal, and so an answer from the member, only every 20 s), each keep
// a request under way for 40 s: the holder its renewals (a stream, on a
// client that keeps one), the waiter its watch of the holder's key. Both
// exit 0 and say nothing (no GOAWAY, no closed connection, no warning
// but the old-server one); nobody takes the lock during the hold: the
// waiter runs only after the release, a call every 2 s is refused busy,
// and the holder's key keeps its lease.
func TestKeepaliveMinTime(t *testing.T) {
	need(t)
	p := prefix(t)
	sc := startServer(t, 3, cluster.Options{ExtraArgs: []string{"--grpc-keepalive-min-time", "30s"}})
	cli, err := sc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	args := []string{"--backend", "etcd", "--endpoints", sc.EndpointList(), "--key-prefix", p, "--paths", "/srv/keepalive"}
	// A TTL of 60 s renews every 20 s: the renewals' answers, which
	// clear the member's count of pings, come too seldom to hide pings
	// sent every 5 s.
	h := startHolder(t, "withlock", append(args, "--ttl", "60s"), filepath.Join(t.TempDir(), "release"))
	pathKeys := func() map[string]int64 {
		k := keysOf(t, cli, p)
		maps.DeleteFunc(k, func(key string, _ int64) bool { return !strings.HasPrefix(key, p+"/paths/") })
		return k
	}
	var held map[string]int64
	waitFor(t, 15*time.Second, "the holder's key", func() bool { held = pathKeys(); return len(held) == 1 })
	since := time.Now()
	w := startCall(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, "withlock", append(args, "--ttl", "60s", "--wait", "2m", "--", "echo", "ran")...)
	waitFor(t, 15*time.Second, "the waiter's queue key", func() bool { return len(keysOf(t, cli, p)) == 2 })
	probes := 0
	for time.Since(since) < 40*time.Second {
		if h.exited() {
			t.Fatalf("the holder exited %d after %v: %q %q", exitCode(h.cmd, nil), time.Since(since).Round(time.Millisecond), h.out.String(), h.errb.String())
		}
		r := run(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, "withlock", append(args, "--", "echo", "ran")...)
		probes++
		if r.code != 75 || r.stdout != "" {
			t.Fatalf("a second call %v into the hold: exit %d, stdout %q, stderr %q; want 75 (busy), nothing run", time.Since(since).Round(time.Millisecond), r.code, r.stdout, r.stderr)
		}
		if w.exited() {
			t.Fatalf("the waiter exited %d %v into the hold: %q %q", exitCode(w.cmd, nil), time.Since(since).Round(time.Millisecond), w.out.String(), w.errb.String())
		}
		if k := pathKeys(); !maps.Equal(k, held) {
			t.Fatalf("%v into the hold the keys are %v, were %v", time.Since(since).Round(time.Millisecond), k, held)
		}
		time.Sleep(2 * time.Second) // the probes' pace, not a wait for anything
	}
	h.release(t)
	code := h.wait(t, 30*time.Second)
	t.Logf("held %v, %d second calls refused busy; the holder: exit %d, stderr %q", time.Since(since).Round(time.Millisecond), probes, code, h.errb.String())
	if code != 0 || h.out.String() != "held\n" {
		t.Errorf("the holder: exit %d, stdout %q; want 0, held", code, h.out.String())
	}
	if c := complaints(h.errb.String()); len(c) > 0 {
		t.Errorf("the holder complained (want nothing: no GOAWAY, too_many_pings or closed connection):\n%s", strings.Join(c, "\n"))
	}
	code = w.wait(t, 30*time.Second)
	t.Logf("the waiter: exit %d, stderr %q", code, w.errb.String())
	if code != 0 || w.out.String() != "ran\n" {
		t.Errorf("the waiter: exit %d, stdout %q; want 0, ran", code, w.out.String())
	}
	if c := complaints(w.errb.String()); len(c) > 0 {
		t.Errorf("the waiter complained (want nothing: no GOAWAY, too_many_pings or closed connection):\n%s", strings.Join(c, "\n"))
	}
	if k := keysOf(t, cli, p); len(k) != 0 {
		t.Errorf("%d keys left after the release: %v", len(k), k)
	}
}

// A member started with --max-request-bytes 65536 refuses a request above
// 64 KiB; a set of 2,000 paths is taken there in several transactions,
// each of which has to stay under the limit.
//
// ShortNames: 2,000 paths of 24 bytes and a short command are taken
// and run the command; a second call on a set that overlaps it by half is
// refused busy while it holds, and one with --wait (its queue key lists
// its 2,000 paths) takes its set once it is released.
//
// LongNames: 2,000 paths of 200 bytes and a command line of 200
// characters (every key's value names its path and the command, cut at
// 200) are taken too: the transactions are cut by size, not only by
// their count of operations.
func TestMaxRequestBytes(t *testing.T) {
	need(t)
	sc := startServer(t, 3, cluster.Options{ExtraArgs: []string{"--max-request-bytes", "65536"}})
	cli, err := sc.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	noEnv := []string{"WITHLOCK_ETCD_ENDPOINTS="}
	// list writes the paths dir/NAME-i for i in [from, to), each padded to
	// size bytes, to a file and returns the file's name.
	list := func(t *testing.T, name string, from, to, size int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			pth := fmt.Sprintf("/srv/www/posts/%04d-", i)
			fmt.Fprintf(&b, "%s%s.md\n", pth, strings.Repeat("t", max(size-len(pth)-3, 1)))
		}
		f := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	args := func(t *testing.T, from string) []string {
		return []string{"--endpoints", sc.EndpointList(), "--key-prefix", prefix(t), "--paths-from", from}
	}

	t.Run("ShortNames", func(t *testing.T) {
		p := prefix(t)
		first, second := list(t, "first", 0, 2000, 24), list(t, "second", 1000, 3000, 24)
		h := startHolder(t, "withlock-etcd", args(t, first), filepath.Join(t.TempDir(), "release"))
		waitFor(t, 30*time.Second, "the 2,000 keys of the first set", func() bool {
			if h.exited() {
				t.Fatalf("the first set's holder exited %d: %q %q", exitCode(h.cmd, nil), h.out.String(), h.errb.String())
			}
			return len(keysOf(t, cli, p)) == 2000
		})
		r := run(t, noEnv, "withlock-etcd", append(args(t, second), "--", "echo", "ran")...)
		if r.code != 75 || r.stdout != "" {
			t.Fatalf("the overlapping set while the first holds: exit %d, stdout %q, stderr %q; want 75, nothing run", r.code, r.stdout, r.stderr)
		}
		if k := keysOf(t, cli, p); len(k) != 2000 {
			t.Fatalf("a busy attempt left %d keys (want the holder's 2,000)", len(k))
		}
		w := startCall(t, noEnv, "withlock-etcd", append(args(t, second), "--wait", "50s", "--", "sh", "-c", `echo "$WITHLOCK_KEY_PATHS" | tr , '\n' | wc -l`)...)
		waitFor(t, 15*time.Second, "the waiter's queue key", func() bool {
			for k := range keysOf(t, cli, p) {
				if strings.HasPrefix(k, p+"/queue/") {
					return true
				}
			}
			return false
		})
		h.release(t)
		if code := h.wait(t, 30*time.Second); code != 0 || h.out.String() != "held\n" {
			t.Fatalf("the first set's holder: exit %d, %q %q", code, h.out.String(), h.errb.String())
		}
		if code := w.wait(t, 45*time.Second); code != 0 || strings.TrimSpace(w.out.String()) != "2000" {
			t.Fatalf("the waiter after the release: exit %d, %q %q; want 0 and its 2,000 paths", code, w.out.String(), w.errb.String())
		}
		if k := keysOf(t, cli, p); len(k) != 0 {
			t.Errorf("%d keys left after every call ended", len(k))
		}
	})

	t.Run("LongNames", func(t *testing.T) {
		script := "echo ran; : " + strings.Repeat("a-long-cron-line ", 12)
		r := run(t, noEnv, "withlock-etcd", append(args(t, list(t, "long", 0, 2000, 200)), "--", "sh", "-c", script)...)
		if r.code != 0 || r.stdout != "ran\n" {
			t.Errorf("2,000 paths of 200 bytes, a command of %d characters: exit %d, stdout %q, stderr %q; want 0, ran", len(script)+len("sh -c "), r.code, r.stdout, r.stderr)
		}
		if k := keysOf(t, cli, prefix(t)); len(k) != 0 {
			t.Errorf("%d keys left after the call", len(k))
		}
	})
}

// A cluster that serves TLS only and requires a client certificate
// (--client-cert-auth). A call that cannot reach it says why in one line,
// exit 125, nothing run, well within twice the dial timeout: no client
// certificate, a CA that did not sign the members' certificates, a
// --server-name the certificates do not carry, http:// to the TLS port, a
// host name that does not resolve, a port nobody listens on. The host name
// has a label that ends in "-", which is no host name: Go's resolver says
// "no such host" without asking a DNS server, as it says when one answers
// that the name does not exist, so the test depends on none. (An .onion
// name, which Go does not look up either, ends in "no suitable address
// found" instead.)
func TestDialErrorsNameCause(t *testing.T) {
	need(t)
	p := prefix(t)
	pk := newPKI(t)
	srvCert, srvKey := pk.issue("server")
	rootCert, rootKey := pk.issue("root")
	cliCert, cliKey := pk.issue("client")
	sc := startServer(t, 1, cluster.Options{
		CertFile: srvCert, KeyFile: srvKey, CAFile: pk.caFile(), ClientCertAuth: true,
		ClientTLS: pk.tlsConfig(rootCert, rootKey),
	})
	other := newPKI(t) // a CA that signed nothing of the cluster's
	ep := sc.Endpoints()[0]
	port := sc.Members[0].ClientPort
	refused := clientBase + serverOffset + 3
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", refused)); err != nil {
		t.Fatalf("port %d, which nobody should listen on: %v", refused, err)
	} else {
		l.Close()
	}
	// The binaries' dial timeout (docs/etcd.md: an unreachable cluster is
	// reported after 5 s).
	const dialTimeout = 5 * time.Second
	tlsArgs := []string{"--ca-file", pk.caFile(), "--cert-file", cliCert, "--key-file", cliKey}

	// The right options reach it.
	if r := run(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, "withlock-etcd", append(append([]string{"--endpoints", ep, "--key-prefix", p}, tlsArgs...), "--paths", "/srv/dial", "--", "echo", "ran")...); r.code != 0 || r.stdout != "ran\n" {
		t.Fatalf("with the CA, a client certificate: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		name     string
		endpoint string
		args     []string
		want     []string // any of them, case-insensitive
	}{
		{"NoClientCert", ep, []string{"--ca-file", pk.caFile()}, []string{"certificate"}},
		{"WrongCA", ep, []string{"--ca-file", other.caFile(), "--cert-file", cliCert, "--key-file", cliKey}, []string{"x509", "unknown authority"}},
		{"WrongServerName", ep, append(tlsArgs, "--server-name", "wrong-name.test"), []string{"wrong-name.test"}},
		{"HTTPToTLSPort", fmt.Sprintf("http://127.0.0.1:%d", port), nil, []string{"tls", "https"}},
		{"UnresolvableHost", fmt.Sprintf("https://no-such-member-.test:%d", port), tlsArgs, []string{"no such host", "lookup", "dns", "resolve"}},
		{"Refused", fmt.Sprintf("https://127.0.0.1:%d", refused), tlsArgs, []string{"connection refused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, []string{"WITHLOCK_ETCD_ENDPOINTS="}, "withlock-etcd", append(append([]string{"--endpoints", c.endpoint, "--key-prefix", p}, c.args...), "--paths", "/srv/dial", "--", "echo", "ran")...)
			var lines []string // less the hint that the command did not run
			for _, l := range complaints(r.stderr) {
				if !strings.Contains(l, ": hint: ") {
					lines = append(lines, l)
				}
			}
			named := false
			for _, w := range c.want {
				named = named || len(lines) == 1 && strings.Contains(strings.ToLower(lines[0]), w)
			}
			t.Logf("exit %d after %v: %q", r.code, r.dur.Round(time.Millisecond), r.stderr)
			if r.code != 125 || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want 125, nothing run", r.code, r.stdout)
			}
			if len(lines) != 1 || !named {
				t.Errorf("stderr %q; want one line (and hints) that names the cause (one of %q)", r.stderr, c.want)
			}
			if r.dur >= 2*dialTimeout {
				t.Errorf("took %v; want well within twice the dial timeout (%v)", r.dur.Round(time.Millisecond), 2*dialTimeout)
			}
		})
	}
}
