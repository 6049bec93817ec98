//go:build etcd

package etcd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/testbin"
)

// withlock --backend etcd and WITHLOCK_BACKEND=etcd exec withlock-etcd with
// the same argv: same PID (the command's parent is the process that was
// started), exit codes passed through.
func TestDispatchKeepsPID(t *testing.T) {
	need(t)
	p := prefix(t)
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--backend", "etcd"}},
		{nil, []string{"--backend=etcd"}},
		{[]string{"WITHLOCK_BACKEND=etcd"}, nil},
		{[]string{"WITHLOCK_BACKEND=etcd"}, []string{"-v"}},
	} {
		args := append(c.args, "--key-prefix", p, "--paths", "/srv/x", "--", "sh", "-c", `echo $PPID; exit 7`)
		cmd := command(c.env, "withlock", args...)
		out, _ := cmd.Output()
		if code := exitCode(cmd, nil); code != 7 {
			t.Fatalf("%v %q: exit %d, want the command's 7", c.env, args, code)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(cmd.Process.Pid) {
			t.Errorf("%v %q: the command's parent is %s, want withlock's own PID %d", c.env, args, got, cmd.Process.Pid)
		}
	}
	// --backend local wins over the environment; the etcd flags are
	// refused without --backend etcd.
	r := run(t, []string{"WITHLOCK_BACKEND=etcd", "WITHLOCK_LOCK_DIR=" + t.TempDir()}, "withlock", "--backend", "local", "--paths", "/srv/x", "--", "true")
	if r.code != 0 {
		t.Errorf("--backend local under WITHLOCK_BACKEND=etcd: exit %d %s", r.code, r.stderr)
	}
	r = run(t, nil, "withlock", "--ttl", "5s", "--paths", "/srv/x", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "--ttl needs --backend etcd") {
		t.Errorf("--ttl without --backend etcd: exit %d %s", r.code, r.stderr)
	}
	// The command after -- is never read for --backend.
	r = run(t, []string{"WITHLOCK_LOCK_DIR=" + t.TempDir()}, "withlock", "--paths", "/srv/x", "--", "echo", "--backend", "etcd")
	if r.code != 0 || r.stdout != "--backend etcd\n" {
		t.Errorf("--backend after --: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// Without withlock-etcd next to withlock or on PATH: 125, nothing runs.
func TestDispatchWithoutBinary(t *testing.T) {
	need(t)
	dir := t.TempDir()
	if err := testbin.CopyTo("withlock", dir); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	cmd := exec.Command(filepath.Join(dir, "withlock"), "--backend", "etcd", "--paths", "/srv/x", "--", "touch", marker)
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	out, _ := cmd.CombinedOutput()
	if code := exitCode(cmd, nil); code != 125 || !strings.Contains(string(out), "withlock-etcd") {
		t.Errorf("exit %d: %s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}

// withlock --help documents the etcd flags, and withlock-etcd accepts
// exactly withlock's flags (both parse withlock.CLI, internal/withlock).
func TestHelpListsSameFlags(t *testing.T) {
	need(t)
	flags := func(bin string) []string {
		out, err := exec.Command(filepath.Join(binDir, bin), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", bin, err)
		}
		fs := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1)
		var names []string
		for _, f := range fs {
			names = append(names, f[1])
		}
		slices.Sort(names)
		return names
	}
	a, b := flags("withlock"), flags("withlock-etcd")
	if !slices.Equal(a, b) {
		t.Errorf("flags differ:\nwithlock      %v\nwithlock-etcd %v", a, b)
	}
	for _, f := range []string{"--backend", "--endpoints", "--key-root", "--key-prefix", "--ttl", "--on-coordinator-down"} {
		if !slices.Contains(a, f) {
			t.Errorf("withlock --help does not list %s", f)
		}
	}
}

// Busy: the skip code and the holder named; --wait hands over when the
// holder releases (on an etcd watch event), not at the end of its wait.
func TestBusyAndWait(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	base := []string{"--backend", "etcd", "--key-prefix", p, "--key-root", dir, "--paths", dir + "/post.md"}
	release := filepath.Join(dir, "release")
	holder := command(nil, "withlock", append(base, "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", release)...)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "post.md")] != 0 })

	// -v: the skip is said on a pipe too (silent under cron otherwise).
	r := run(t, nil, "withlock", append(base, "-v", "--", "true")...)
	if r.code != 75 || !strings.Contains(r.stderr, "post.md is busy") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", holder.Process.Pid)) {
		t.Fatalf("busy: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, nil, "withlock", append(base, "--skip-code", "3", "-q", "--", "true")...)
	if r.code != 3 || r.stderr != "" {
		t.Fatalf("busy with --skip-code 3 -q: exit %d, stderr %q", r.code, r.stderr)
	}

	// A waiter: once it has tried, found the key busy and is watching it
	// (the members serve one more watcher), the holder releases. The
	// waiter hands over on the watch event: it must run long before its
	// own --wait (60 s) runs out, within a hang bound of 20 s (a waiter
	// that only retried at its deadline, or never woke, would not).
	// Measured, not asserted: the handoff takes a fraction of a second.
	stamp := filepath.Join(dir, "stamp")
	before := watchers(t)
	waiter := command(nil, "withlock", append(base, "--wait", "60s", "--", "sh", "-c", `date +%s.%N > "$1"`, "sh", stamp)...)
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	defer waiter.Process.Kill()
	waitFor(t, 20*time.Second, "the waiter to watch the busy key", func() bool { return watchers(t) > before })
	if _, err := os.Stat(stamp); err == nil {
		t.Fatal("the waiter ran while the holder held the key")
	}
	released := time.Now()
	os.WriteFile(release, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the waiter did not run within 20 s of the release")
	}
	data, _ := os.ReadFile(stamp)
	at, _ := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	t.Logf("--wait handoff after the holder's command ended: %v", time.Unix(0, int64(at*1e9)).Sub(released).Round(time.Millisecond))
	if k := keys(t, p); len(k) != 0 {
		t.Errorf("keys left after both exited: %v", k)
	}
}

// The command learns the fencing token; successive holders of a path get
// strictly increasing revisions, equal to the key's create revision.
func TestFencingToken(t *testing.T) {
	need(t)
	p := prefix(t)
	var last int64
	for i := 0; i < 3; i++ {
		r := run(t, nil, "withlock", "--backend", "etcd", "--key-prefix", p, "--paths", "/srv/blog/a.md", "--slots", "2", "--",
			"sh", "-c", `echo "$WITHLOCK_FENCE_LEASE $WITHLOCK_FENCE_REVISION $WITHLOCK_SLOT $WITHLOCK_KEY_PATHS $WITHLOCK_PATHS"`)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		f := strings.Fields(r.stdout)
		if len(f) != 5 {
			t.Fatalf("env: %q", r.stdout)
		}
		if _, err := strconv.ParseUint(f[0], 16, 64); err != nil || f[0] == "0" {
			t.Errorf("WITHLOCK_FENCE_LEASE %q is not a lease ID in hex", f[0])
		}
		rev, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || rev <= last {
			t.Errorf("WITHLOCK_FENCE_REVISION %q after %d: not increasing", f[1], last)
		}
		last = rev
		if f[2] != "0" || f[3] != `["srv/blog/a.md"]` || f[4] != `["/srv/blog/a.md"]` {
			t.Errorf("env %q", r.stdout)
		}
	}
	// While held, the key's create revision is the token.
	dir := t.TempDir()
	out := filepath.Join(dir, "rev")
	h := command(nil, "withlock-etcd", "--key-prefix", p, "--paths", "/srv/blog/a.md", "--", "sh", "-c", `echo $WITHLOCK_FENCE_REVISION > "$1.tmp"; mv "$1.tmp" "$1"; sleep 30`, "sh", out)
	h.Start()
	defer func() { h.Process.Kill(); h.Wait() }()
	waitFor(t, 10*time.Second, "the token file", func() bool { _, err := os.Stat(out); return err == nil })
	data, _ := os.ReadFile(out)
	cli, _ := cl.Client()
	defer cli.Close()
	resp, err := cli.Get(t.Context(), pathKey(p, "srv/blog/a.md"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get: %v", err)
	}
	if got := strconv.FormatInt(resp.Kvs[0].CreateRevision, 10); got != strings.TrimSpace(string(data)) {
		t.Errorf("create revision %s, token %s", got, data)
	}
}

// Start-up failures: the command never runs. An unreachable cluster is 125
// (or the skip code with --on-coordinator-down skip); a path outside the
// key root is 125.
func TestRefusals(t *testing.T) {
	need(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--endpoints", "http://127.0.0.1:1,http://127.0.0.1:2", "--ttl", "2s"}, 125, "etcd unavailable"},
		// A skip says why only on a terminal or with -v (under cron,
		// silence: docs/cron-gate.md, "Skips under cron").
		{[]string{"--endpoints", "http://127.0.0.1:1", "--ttl", "2s", "--on-coordinator-down", "skip"}, 75, ""},
		{[]string{"-v", "--endpoints", "http://127.0.0.1:1", "--ttl", "2s", "--on-coordinator-down", "skip"}, 75, "skipped"},
		{[]string{"--key-root", "/srv/blog"}, 125, "outside the key root"},
		{[]string{"--ttl", "1500ms"}, 125, "whole seconds"},
		{[]string{"--on-coordinator-down", "maybe"}, 125, "fail or skip"},
		{[]string{"--key-prefix", "nope"}, 125, "must start with /"},
	} {
		args := append([]string{"--backend", "etcd"}, c.args...)
		args = append(args, "--paths", "/srv/other/a.md", "--", "touch", marker)
		// run bounds a hang (a minute); how long giving up takes is
		// logged, not asserted.
		r := run(t, nil, "withlock", args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || (c.msg == "" && r.stderr != "") {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%q: the command ran", c.args)
		}
		t.Logf("%q: gave up after %v", c.args, r.dur.Round(time.Millisecond))
	}
}

// WITHLOCK_PATHS is encoded exactly as the local withlock encodes it (the
// code is a copy): names with quotes, newlines and bytes that are not UTF-8.
func TestPathsEnvMatchesLocal(t *testing.T) {
	need(t)
	dir := t.TempDir()
	list := filepath.Join(dir, "list")
	names := []string{dir + "/a \"q\"\\.md", dir + "/new\nline", dir + "/bad\xff\xfe.md", dir + "/ü.md"}
	os.WriteFile(list, []byte(strings.Join(names, "\x00")), 0o644)
	get := func(env []string, bin string, args ...string) string {
		r := run(t, env, bin, append(args, "--paths-from", list, "-0", "--", "sh", "-c", `printf %s "$WITHLOCK_PATHS"`)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", bin, r.code, r.stderr)
		}
		return r.stdout
	}
	local := get([]string{"WITHLOCK_LOCK_DIR=" + filepath.Join(dir, "locks")}, "withlock")
	etcd := get(nil, "withlock", "--backend", "etcd", "--key-prefix", prefix(t))
	if local != etcd {
		t.Errorf("WITHLOCK_PATHS differ:\nlocal %q\netcd  %q", local, etcd)
	}
}

// txnCalls is the number of Txn requests the running, unfrozen members
// have served (grpc_server_started_total for Txn, from their /metrics).
func txnCalls(t *testing.T) int {
	t.Helper()
	n := 0
	eachMetric(t, true, func(_ int, name string, v float64) {
		if strings.HasPrefix(name, "grpc_server_started_total{") && strings.Contains(name, `grpc_method="Txn"`) {
			n += int(v)
		}
	})
	return n
}

// idleTxns waits until the etcd members count more watchers than before
// (a waiter has started watching), then returns how many transactions
// they received in the next 2 s.
func idleTxns(t *testing.T, before int, what string) int {
	txns, _ := idle(t, before, what)
	return txns
}

// idle waits as idleTxns does, then returns how many transactions the
// members received and how many writes were committed in the next 2 s,
// other than the revokes of leases that expired meanwhile (an earlier
// test's process killed with its lease, say): no client sends those.
func idle(t *testing.T, before int, what string) (txns, writes int) {
	t.Helper()
	waitFor(t, 20*time.Second, what, func() bool { return watchers(t) > before })
	t0, w0, e0 := txnCalls(t), committed(t), expired(t)
	time.Sleep(2 * time.Second) // eight polls' worth of waiting, not a wait for anything
	txns, w, e := txnCalls(t)-t0, committed(t)-w0, expired(t)-e0
	t.Logf("in 2 s of waiting: %d transactions, %d writes committed, %d of them revokes of expired leases", txns, w, e)
	return txns, w - e
}

// committed is the number of writes (raft proposals) the cluster has
// committed: the largest etcd_server_proposals_committed_total of the
// running, unfrozen members.
func committed(t *testing.T) int {
	t.Helper()
	n := 0
	eachMetric(t, true, func(_ int, name string, v float64) {
		if name == "etcd_server_proposals_committed_total" {
			n = max(n, int(v))
		}
	})
	return n
}

// expired is the number of leases the cluster revoked because they
// expired (each revoke one write): the leader counts them
// (etcd_debugging_server_lease_expired_total), so the members' counts
// are added up.
func expired(t *testing.T) int {
	t.Helper()
	n := 0
	eachMetric(t, true, func(_ int, name string, v float64) {
		if name == "etcd_debugging_server_lease_expired_total" {
			n += int(v)
		}
	})
	return n
}

// A waiter writes nothing while nothing is released: its watch says when
// to try, and its poll running out (every 250 ms) costs one read of what
// it waits for (its ledger's keys, ledger.go), no lock transaction (each
// is a write through the cluster's log, taken or not). Before, every
// waiter sent one per poll.
func TestWaiterIdleWritesNothing(t *testing.T) {
	idleWaiter(t, []string{"--paths", "/srv/idle.md"}, []string{"--paths", "/srv/idle.md"})
}

// A waiter for a full pool writes nothing while nothing is released
// either: its poll running out costs a read of the pool (stillFull), not
// a lock transaction (for a waiter with paths, queued, that was two
// writes a poll: the transaction put its paths, then gave them back).
func TestPoolWaiterIdleWritesNothing(t *testing.T) {
	pool := []string{"--slots", "1", "--slot-file", "/srv/idle-slot-{i}"}
	idleWaiter(t, pool, append(pool, "--paths", "/srv/idle-pool.md"))
}

// idleWaiter starts withlock-etcd holding with the arguments held, then
// a --wait waiter with waits that finds it busy, and fails the test if
// the cluster commits a write in 2 s of its waiting; then releases, and
// both must exit 0.
func idleWaiter(t *testing.T, held, waits []string) {
	need(t)
	p := prefix(t)
	release := filepath.Join(t.TempDir(), "release")
	base := []string{"--key-prefix", p}
	holder := command(nil, "withlock-etcd", append(append(base, held...), "--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", release)...)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return len(keys(t, p)) == 1 })
	before := watchers(t)
	waiter := command(nil, "withlock-etcd", append(append(base, waits...), "--wait", "60s", "--", "true")...)
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	defer waiter.Process.Kill()
	// Counted once the waiter is queued: a waiter with a ledger starts
	// its watch before it puts its queue key (ledger.go), so the watch
	// alone does not say it has written all it writes.
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })
	_, writes := idle(t, before, "the waiter to watch what is busy")
	os.WriteFile(release, nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if writes != 0 {
		t.Errorf("the cluster committed %d write(s) in 2 s while the waiter waited and nothing was released; want none", writes)
	}
}
