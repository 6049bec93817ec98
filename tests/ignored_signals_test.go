package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Signals the caller ignored stay ignored: `nohup withlock …` (HUP) and a
// shell's `trap "" INT` before exec. withlock is not ended by them while
// its command runs (nor while it waits), and the command inherits them
// ignored. Before, withlock caught them (which turns an inherited SIG_IGN
// back on): a HUP ended withlock 129 under nohup, and its command started
// with HUP no longer ignored.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	dir := t.TempDir()
	release, started, out := filepath.Join(dir, "release"), filepath.Join(dir, "started"), filepath.Join(dir, "sigign")
	script := `grep '^SigIgn:' /proc/self/status > "$1"; : > "$2"; while [ ! -e "$3" ]; do sleep 0.02; done`
	cmd := exec.Command("sh", "-c", `trap '' HUP INT; exec "$0" --lock-dir "$1" --paths "$2" -- sh -c "$3" sh "$4" "$5" "$6"`,
		filepath.Join(binDir, "withlock"), filepath.Join(dir, "locks"), filepath.Join(dir, "post.md"), script, out, started, release)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitUntil(t, 20*time.Second, "the command to start", func() bool { _, err := os.Stat(started); return err == nil })
	// sh exec'd withlock: the pid is withlock's.
	cmd.Process.Signal(syscall.SIGHUP)
	cmd.Process.Signal(syscall.SIGINT)
	os.WriteFile(release, nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("withlock with HUP and INT ignored, sent both: %v (stderr %q); want exit 0, both still ignored", err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "SigIgn:"))
	mask, err := strconv.ParseUint(v, 16, 64)
	if err != nil || mask&3 != 3 {
		t.Errorf("the command started with SigIgn %q; want HUP and INT (bits 0 and 1) ignored", data)
	}
}
