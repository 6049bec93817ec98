//go:build etcd

package etcd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A waiter ended by a signal before its command starts revokes its leases
// on the way out (etcdlock.Backend.Abort, at most a second): its place in
// the queue goes at once, not after its TTL, so later jobs stop yielding
// to a waiter that is gone. A plain waiter and a --first-of waiter (whose
// queue key has a lease of its own), each ended by TERM: exit 143, and
// their keys gone long before their leases (TTL 60 s plus the default
// lock-delay) could have ended them. On the code before, the keys stayed
// for those 65 s and the newcomer was skipped.
func TestSignalRevokesQueueKey(t *testing.T) {
	p, dir, base, args := etcdCase(t)
	rel := filepath.Join(dir, "release")
	holdUntil(t, base, "/srv/sa", rel)
	waitFor(t, 10*time.Second, "the holder's key", func() bool { return keys(t, p)[pathKey(p, "srv/sa")] != 0 })
	cands := filepath.Join(dir, "cands")
	os.WriteFile(cands, []byte("/srv/sa\n/srv/sc\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"a --wait waiter", args("--ttl", "60s", "--wait", "5m", "--paths", "/srv/sa,/srv/sb", "--", "true")},
		{"a --first-of waiter", args("--ttl", "60s", "--first-of", "--candidates-from", cands, "--wait", "5m", "--", "true")},
	} {
		w := command(nil, "withlock", c.args...)
		stderr := startWaiter(t, w)
		waitFor(t, 20*time.Second, c.name+"'s queue key", func() bool { return queueKeys(t, p) == 1 })
		newcomer := args("--paths", "/srv/sb,/srv/sc", "--", "true")
		if r := run(t, nil, "withlock", newcomer...); r.code != 75 {
			t.Errorf("%s queued: a newcomer on a path it waits for: exit %d, stderr %q; want 75", c.name, r.code, r.stderr)
		}
		// withlock execs withlock-etcd, which keeps the pid.
		w.Process.Signal(syscall.SIGTERM)
		err := w.Wait()
		if code := exitCode(w, err); code != 143 {
			t.Errorf("%s ended by TERM: exit %d, stderr %q; want 143", c.name, code, stderr.String())
		}
		if strings.TrimSpace(stderr.String()) != "" && !strings.Contains(stderr.String(), "warning: etcd server") {
			t.Errorf("%s ended by TERM printed %q; want nothing", c.name, stderr.String())
		}
		// Far less than the 65 s its lease would take to expire.
		waitFor(t, 20*time.Second, c.name+"'s queue key to be revoked", func() bool { return queueKeys(t, p) == 0 })
		if r := run(t, nil, "withlock", newcomer...); r.code != 0 {
			t.Errorf("after %s was ended by TERM: a newcomer: exit %d, stderr %q; want 0", c.name, r.code, r.stderr)
		}
	}
	os.WriteFile(rel, nil, 0o644)
}
