//go:build etcd

package etcd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crongate/crongate/internal/etcdpause"
)

// rawUnsafe matches a character internal/safetext never prints raw (line
// feeds aside, which separate lines).
var rawUnsafe = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")

// A pause reason with a right-to-left override is refused by cron-gate
// pause before anything is written to the cluster; a pause put by hand
// with etcdctl whose reason holds escapes and an override is a corrupt
// pause — the gate does not run, every message about it is escaped — and
// resume deletes it (issue 12, item 7).
func TestCronGateReasonControls(t *testing.T) {
	need(t)
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Fatal("etcdctl is not installed (apt-get install etcd-client)")
	}
	a := newCGHost(t, "a", "")
	r := a.cg("pause", "g", "--reason", "until Jan 1, 2025\u202e")
	if r.code != 125 || !strings.Contains(r.stderr, "the reason contains a bidirectional control (U+202E)") || rawUnsafe.MatchString(r.stderr) {
		t.Fatalf("pause with U+202E: exit %d, stderr %q; want 125 and the reason refused", r.code, r.stderr)
	}
	if k := keys(t, prefix(t)); len(k) != 0 {
		t.Fatalf("a refused pause wrote %v", k)
	}

	// By hand: the JSON escapes decode to ESC, BEL and a newline; the
	// override is there as raw UTF-8.
	key := etcdpause.PauseKey(prefix(t), "g")
	val := `{"by":"command","reason":"L1\nL2\u001b]0;pwned\u0007\u001b[31mred ` + "\u202e" + `5202 ,1 naJ","who":"ops@h"}`
	if out, err := exec.Command(etcdctl, "--endpoints", cl.EndpointList(), "put", key, val).CombinedOutput(); err != nil {
		t.Fatalf("etcdctl put: %v: %s", err, out)
	}
	marker := filepath.Join(a.dir, "ran")
	r = a.cg("g", "--", "touch", marker)
	if _, err := os.Stat(marker); err == nil || r.code == 0 || r.code == 75 {
		t.Fatalf("a gate with a corrupt pause ran or skipped as paused: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, key) || !strings.Contains(r.stderr, "bidirectional control") && !strings.Contains(r.stderr, "line break") || rawUnsafe.MatchString(r.stderr) {
		t.Errorf("the run's error: %q; want the key named, the reason refused, nothing raw", r.stderr)
	}
	for _, args := range [][]string{{"status"}, {"status", "g"}, {"status", "--json"}, {"check", "--dry-run"}} {
		r = a.cg(args...)
		if rawUnsafe.MatchString(r.stdout) || rawUnsafe.MatchString(r.stderr) {
			t.Errorf("cron-gate %v printed a raw control or bidi character: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
		if args[0] == "status" && !strings.Contains(r.stderr+r.stdout, key) {
			t.Errorf("cron-gate %v does not name the corrupt key: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
	if r = a.cg("resume", "g"); r.code != 0 {
		t.Fatalf("resume of the corrupt pause: exit %d %s", r.code, r.stderr)
	}
	if r = a.cg("g", "--", "touch", marker); r.code != 0 {
		t.Fatalf("after resume: exit %d %s", r.code, r.stderr)
	}
}
