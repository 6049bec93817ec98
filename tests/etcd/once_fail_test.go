//go:build etcd

package etcd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
)

// A failed run gives its period back across hosts at once (issue 32 item
// 9): host a's run of the period fails (exit 3), and host b, called right
// after, runs the period, where a claim left to expire would make it skip
// ("is claimed by run") for the claim's TTL (gate.ClaimTTL, 10 s). After
// b's success, a finds the period done. The mutant
// etcd-claim-kept-after-failure is the claim not revoked after a failure.
func TestOncePerFailureReleasesClaim(t *testing.T) {
	need(t)
	root := t.TempDir()
	marks := filepath.Join(root, "marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgA, cacheA := onceBinHost(t, root, "a")
	cfgB, cacheB := onceBinHost(t, root, "b")

	r := run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheA}, "cron-gate", "--config", cfgA, "daily", "--", "sh", "-c", "exit 3")
	if r.code != 3 {
		t.Fatalf("host a's failing run: exit %d, want 3: %s", r.code, r.stderr)
	}
	r = run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheB}, "cron-gate", "-v", "--config", cfgB, "daily", "--", "touch", marks+"/b-ran")
	if r.code != 0 {
		t.Fatalf("host b right after a's failed run: exit %d, want 0 (the failed run's claim released): %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(marks, "b-ran")); err != nil {
		t.Fatalf("host b's command did not run: %v", err)
	}
	r = run(t, []string{"CRON_GATE_CACHE_DIR=" + cacheA}, "cron-gate", "-v", "--config", cfgA, "daily", "--", "touch", marks+"/a-ran")
	if r.code != gate.DefaultSkipCode || !strings.Contains(r.stderr, "is done by run") {
		t.Fatalf("host a after b's success: exit %d, want %d (done): %s", r.code, gate.DefaultSkipCode, r.stderr)
	}
}
