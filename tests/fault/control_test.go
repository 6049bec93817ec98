package fault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultworkerControl is the negative control of the fault tests'
// checker: a marker whose owner is alive is an overlap; a marker whose
// owner is dead (killed inside its critical section) is not; a slot index
// at or over the cap is reported.
func TestFaultworkerControl(t *testing.T) {
	const path = "/x/post.md"
	h := sha256.Sum256([]byte(path))
	key := "path-" + hex.EncodeToString(h[:8])
	worker := func(mark string, env ...string) string {
		t.Helper()
		cmd := exec.Command(bin("faultworker"), mark, "0", "main:3")
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("faultworker: %v %s", err, out)
		}
		v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS"))
		return string(v)
	}

	// A live owner: an overlap.
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	_, ticks, _ := procStat(live.Process.Pid)
	mark := t.TempDir()
	os.WriteFile(filepath.Join(mark, key), []byte(fmt.Sprintf("%d %d", live.Process.Pid, ticks)), 0o644)
	if v := worker(mark, `WITHLOCK_PATHS=["`+path+`"]`, "WITHLOCK_SLOT=0"); !strings.Contains(v, "overlap on "+key) {
		t.Errorf("a marker of a live owner was not reported; VIOLATIONS=%q", v)
	}

	// A dead owner: not an overlap, and the marker is taken over and
	// removed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mark = t.TempDir()
	os.WriteFile(filepath.Join(mark, key), []byte(fmt.Sprintf("%d 1", dead.Process.Pid)), 0o644)
	if v := worker(mark, `WITHLOCK_PATHS=["`+path+`"]`, "WITHLOCK_SLOT=1"); v != "" {
		t.Errorf("a stale marker of a dead owner was reported: %q", v)
	}
	if _, err := os.Stat(filepath.Join(mark, key)); err == nil {
		t.Errorf("the stale marker was not taken over and removed")
	}

	// A slot over the cap.
	mark = t.TempDir()
	if v := worker(mark, `WITHLOCK_PATHS=[]`, "WITHLOCK_SLOT=3"); !strings.Contains(v, "pool over cap") {
		t.Errorf("slot 3 of a pool of 3 was not reported; VIOLATIONS=%q", v)
	}
}
