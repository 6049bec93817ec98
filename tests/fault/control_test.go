package fault

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultworkerControl is the negative control of the fault tests'
// checker: a marker whose owner is alive is an overlap, also when the two
// reach the post through different paths (the marker is keyed on the file
// the worker opens); a marker whose owner is dead (killed inside its
// critical section) is not; a slot index at or over the cap is reported;
// so is a WITHLOCK_PATHS that is not the posts' real paths.
func TestFaultworkerControl(t *testing.T) {
	full(t)
	root := realTempDir(t)
	post := filepath.Join(root, "posts", "post.md")
	alias := filepath.Join(root, "alias", "post.md")
	os.Mkdir(filepath.Join(root, "posts"), 0o755)
	os.WriteFile(post, nil, 0o644)
	os.Symlink("posts", filepath.Join(root, "alias"))
	var st unix.Stat_t
	if err := unix.Stat(post, &st); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("post-%d-%d", st.Dev, st.Ino)
	canonJSON := `WITHLOCK_PATHS=["` + post + `"]`
	worker := func(mark string, env []string, posts ...string) string {
		t.Helper()
		cmd := exec.Command(bin("faultworker"), append([]string{mark, "0", "main:3", "--"}, posts...)...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("faultworker: %v %s", err, out)
		}
		v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS"))
		return string(v)
	}

	// A live owner: an overlap, through the canonical path and the alias.
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	_, ticks, _ := procStat(live.Process.Pid)
	for _, p := range []string{post, alias} {
		mark := t.TempDir()
		os.WriteFile(filepath.Join(mark, key), []byte(fmt.Sprintf("%d %d", live.Process.Pid, ticks)), 0o644)
		if v := worker(mark, []string{canonJSON, "WITHLOCK_SLOT=0"}, p); !strings.Contains(v, "overlap on "+key) || strings.Contains(v, "withlock says") {
			t.Errorf("%s: a marker of a live owner was not reported; VIOLATIONS=%q", p, v)
		}
	}

	// A dead owner: not an overlap, and the marker is taken over and
	// removed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mark := t.TempDir()
	os.WriteFile(filepath.Join(mark, key), []byte(fmt.Sprintf("%d 1", dead.Process.Pid)), 0o644)
	if v := worker(mark, []string{canonJSON, "WITHLOCK_SLOT=1"}, post); v != "" {
		t.Errorf("a stale marker of a dead owner was reported: %q", v)
	}
	if _, err := os.Stat(filepath.Join(mark, key)); err == nil {
		t.Errorf("the stale marker was not taken over and removed")
	}

	// A slot over the cap.
	mark = t.TempDir()
	if v := worker(mark, []string{`WITHLOCK_PATHS=[]`, "WITHLOCK_SLOT=3"}); !strings.Contains(v, "pool over cap") {
		t.Errorf("slot 3 of a pool of 3 was not reported; VIOLATIONS=%q", v)
	}

	// withlock reporting the alias it did not resolve.
	mark = t.TempDir()
	if v := worker(mark, []string{`WITHLOCK_PATHS=["` + alias + `"]`, "WITHLOCK_SLOT=0"}, alias); !strings.Contains(v, "withlock says it locked") {
		t.Errorf("a WITHLOCK_PATHS that is not the post's real path was not reported; VIOLATIONS=%q", v)
	}
}
