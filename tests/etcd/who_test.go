//go:build etcd

package etcd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// withlock who --backend etcd (issue 16, item 4): through the lockset
// seam (lockset.Inspector), one read per key: a path another host's
// withlock holds is held, with that holder's pid, host and since when;
// a full pool exits 75 too; all free exits 0. Nothing is taken.
func TestWhoEtcd(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	hold := command(nil, "withlock", "--backend", "etcd", "--key-prefix", p, "--paths", "/srv/blog/ko/a.md", "--slots", "1", "--slot-file", "/srv/pool-{i}.lock",
		"--", "sh", "-c", "touch "+ready+"; exec sleep 300")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hold.Process.Kill(); hold.Wait() }()
	waitFor(t, 30*time.Second, "the holder", func() bool { _, err := os.Stat(ready); return err == nil })

	r := run(t, nil, "withlock", "who", "--backend", "etcd", "--key-prefix", p, "--json", "/srv/blog/ko/a.md", "/srv/blog/en/a.md")
	if r.code != 75 {
		t.Fatalf("who a held path: exit %d, want 75\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Backend string
		Busy    bool
		Paths   []struct {
			Canonical, Lock, State string
			Holders                []struct {
				Pid   int
				Host  string
				Since time.Time
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	host, _ := os.Hostname()
	if rep.Backend != "etcd" || !rep.Busy || len(rep.Paths) != 2 || rep.Paths[0].State != "held" || rep.Paths[1].State != "free" ||
		len(rep.Paths[0].Holders) != 1 || rep.Paths[0].Holders[0].Pid != hold.Process.Pid || rep.Paths[0].Holders[0].Host != host ||
		rep.Paths[0].Holders[0].Since.IsZero() || !strings.HasPrefix(rep.Paths[0].Lock, p+"/paths/") {
		t.Errorf("who: %+v", rep)
	}
	r = run(t, nil, "withlock", "who", "--backend", "etcd", "--key-prefix", p, "--slots", "1", "--slot-file", "/srv/pool-{i}.lock")
	if r.code != 75 || !strings.Contains(r.stdout, "all 1 slots held") || !strings.Contains(r.stdout, "pid "+strconv.Itoa(hold.Process.Pid)+" on "+host) {
		t.Errorf("who a full pool: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "withlock", "who", "--backend", "etcd", "--key-prefix", p, "/srv/blog/en/a.md")
	if r.code != 0 || !strings.Contains(r.stdout, "free") {
		t.Errorf("who a free path: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// who took nothing: the holder's keys are the only ones.
	if ks := keys(t, p); len(ks) != 2 {
		t.Errorf("keys after who: %v", ks)
	}
}

// withlock who --backend etcd reads the fair-waiting queue too: a path
// that is free but that an earlier waiter waits for exits 75 and names
// that waiter (its pid and host, from its queue key), as withlock would
// yield to it; a path no waiter wants exits 0. who grants no lease (it
// takes nothing): the cluster's leases are the same before and after.
func TestWhoEtcdQueued(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	base := []string{"--backend", "etcd", "--key-prefix", p}
	rel := filepath.Join(dir, "release")
	holdUntil(t, base, "/srv/wa", rel)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/wa")] != 0 })
	w := command(nil, "withlock", append(append([]string{}, base...), "--wait", "60s", "--paths", "/srv/wa,/srv/wb", "--", "true")...)
	startWaiter(t, w)
	waitFor(t, 20*time.Second, "the waiter's queue key", func() bool { return queueKeys(t, p) == 1 })

	leases := func() (n int) {
		withClient(t, func(ctx context.Context, cli *clientv3.Client) {
			r, err := cli.Leases(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n = len(r.Leases)
		})
		return n
	}
	before := leases()
	host, _ := os.Hostname()
	who := append(append([]string{"who"}, base...), "/srv/wb")
	r := run(t, nil, "withlock", who...)
	if r.code != 75 || !strings.Contains(r.stdout, "\nqueued: an earlier waiter, pid "+strconv.Itoa(w.Process.Pid)+" on "+host) ||
		!strings.Contains(r.stdout, "waits for some of these paths: withlock would yield to it") || !strings.Contains(r.stdout, "  ticket  "+p+"/queue/") {
		t.Errorf("who a free path a waiter waits for: exit %d, want 75 naming the waiter\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "withlock", append(who[:len(who)-1:len(who)-1], "--json", "/srv/wb")...)
	var rep struct {
		Busy   bool
		Queued *struct {
			Ticket string
			Waiter struct {
				Pid  int
				Host string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if r.code != 75 || !rep.Busy || rep.Queued == nil || rep.Queued.Waiter.Pid != w.Process.Pid || rep.Queued.Waiter.Host != host || !strings.HasPrefix(rep.Queued.Ticket, p+"/queue/") {
		t.Errorf("who --json: exit %d, %+v\n%s", r.code, rep, r.stdout)
	}
	r = run(t, nil, "withlock", append(append([]string{"who"}, base...), "/srv/wc")...)
	if r.code != 0 || strings.Contains(r.stdout, "queued") {
		t.Errorf("who a path no waiter wants: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := leases(); after != before {
		t.Errorf("leases: %d before who, %d after: who granted one", before, after)
	}
	os.WriteFile(rel, nil, 0o644)
}
