//go:build etcd

package etcd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
