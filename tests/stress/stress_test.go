// Package stress proves mutual exclusion under load with the real binaries:
// withlock processes (Go) and Python processes running the seed's rule take
// random overlapping path sets and one slot of a shared pool, and every
// critical section claims marker files with O_CREAT|O_EXCL, so any overlap
// of two holders of one path or one slot is recorded.
//
// STRESS_SECONDS sets the duration (default 15, CI's bounded mode; the
// README documents a long mode).
package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/tests/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func needPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required under CI")
		}
		t.Skip("python3 not installed")
	}
}

// TestCheckerDetectsOverlap is the negative control: a critical section
// entered while another holder's marker exists must be reported, also when
// the two reach the post through different paths (a symlinked alias: the
// marker is keyed on the file the worker opens, not on what withlock
// says), and a WITHLOCK_PATHS that is not the posts' real paths is
// reported too.
func TestCheckerDetectsOverlap(t *testing.T) {
	full(t)
	bin, err := testbin.Dir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	post := filepath.Join(root, "posts", "post.md")
	alias := filepath.Join(root, "alias", "post.md")
	os.Mkdir(filepath.Join(root, "posts"), 0o755)
	os.WriteFile(post, nil, 0o644)
	os.Symlink("posts", filepath.Join(root, "alias"))
	marker := func(t *testing.T) string {
		var st unix.Stat_t
		if err := unix.Stat(post, &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("post-%d-%d", st.Dev, st.Ino)
	}
	worker := func(t *testing.T, withlockPaths string, args ...string) string {
		mark := t.TempDir()
		os.WriteFile(filepath.Join(mark, marker(t)), nil, 0o644) // the other holder
		cmd := exec.Command(filepath.Join(bin, "csworker"), append([]string{mark}, args...)...)
		cmd.Env = append(os.Environ(), "WITHLOCK_PATHS="+withlockPaths)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("csworker: %v %s", err, out)
		}
		v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS"))
		return string(v)
	}
	canonJSON := `["` + post + `"]`
	if v := worker(t, canonJSON, "--", post); !strings.Contains(v, "overlap on "+marker(t)) || strings.Contains(v, "withlock says") {
		t.Errorf("checker missed a planted overlap; VIOLATIONS=%q", v)
	}
	if v := worker(t, canonJSON, "--", alias); !strings.Contains(v, "overlap on "+marker(t)) || strings.Contains(v, "withlock says") {
		t.Errorf("checker missed an overlap through the alias; VIOLATIONS=%q", v)
	}
	if v := worker(t, `["`+alias+`"]`, "--", alias); !strings.Contains(v, "withlock says it locked") {
		t.Errorf("checker missed a WITHLOCK_PATHS that is not the post's real path; VIOLATIONS=%q", v)
	}
}

func TestStressExclusion(t *testing.T) {
	full(t)
	needPython(t)
	bin, err := testbin.Dir()
	if err != nil {
		t.Fatal(err)
	}
	secs := 15.0
	if s := os.Getenv("STRESS_SECONDS"); s != "" {
		if secs, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	lockDir := filepath.Join(root, "locks")
	mark := filepath.Join(root, "mark")
	posts := filepath.Join(root, "posts")
	for _, d := range []string{lockDir, mark, posts} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An alias of the posts dir: the same post reached through a symlink
	// must meet the same lock.
	alias := filepath.Join(root, "alias")
	if err := os.Symlink("posts", alias); err != nil {
		t.Fatal(err)
	}
	const nposts, nslots = 10, 3
	var canon, aliased []string
	for i := 0; i < nposts; i++ {
		canon = append(canon, filepath.Join(posts, fmt.Sprintf("post-%d.md", i)))
		aliased = append(aliased, filepath.Join(alias, ".", fmt.Sprintf("post-%d.md", i)))
		// The workers key their markers on the post file they open.
		if err := os.WriteFile(canon[i], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slotTmpl := filepath.Join(root, "slot-{i}.lock")

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs*float64(time.Second)))
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	var ran, skipped int

	// Python holders, looping in-process on the seed's rule.
	py := filepath.Join(testbin.Module(), "tests", "pyrule", "stress_worker.py")
	var pys []*exec.Cmd
	for i := 0; i < 2; i++ {
		args := append([]string{py, mark, lockDir, fmt.Sprint(secs), slotTmpl, fmt.Sprint(nslots), "main"}, canon...)
		c := exec.Command("python3", args...)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		pys = append(pys, c)
	}
	// withlock holders, one process per critical section.
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := 1 + rand.IntN(3)
				var set []string
				for _, i := range rand.Perm(nposts)[:n] {
					if rand.IntN(2) == 0 {
						set = append(set, aliased[i])
					} else {
						set = append(set, canon[i])
					}
				}
				cmd := exec.Command(filepath.Join(bin, "withlock"), "-q", "--lock-dir", lockDir,
					"--paths", strings.Join(set, ","), "--slots", fmt.Sprint(nslots), "--slot-file", slotTmpl,
					"--", filepath.Join(bin, "csworker"), mark, "main", "--")
				cmd.Args = append(cmd.Args, set...)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				code := 0
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					code = -1
				}
				mu.Lock()
				switch code {
				case 0:
					ran++
				case 75:
					skipped++
				default:
					failures = append(failures, fmt.Sprintf("withlock exit %d: %s", code, out))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, c := range pys {
		if err := c.Wait(); err != nil {
			t.Errorf("python stress worker: %v", err)
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
	if v, _ := os.ReadFile(filepath.Join(mark, "VIOLATIONS")); len(v) > 0 {
		t.Fatalf("mutual exclusion violated:\n%s", v)
	}
	count, _ := os.ReadFile(filepath.Join(mark, "COUNT"))
	goCS := strings.Count(string(count), "w")
	pyCS := strings.Count(string(count), "p")
	t.Logf("critical sections checked: %d (withlock %d, python %d); withlock skipped %d times", goCS+pyCS, goCS, pyCS, skipped)
	if goCS == 0 || pyCS == 0 || goCS != ran {
		t.Fatalf("too little contention to prove anything: withlock %d (ran %d), python %d", goCS, ran, pyCS)
	}
	left, _ := os.ReadDir(mark)
	for _, e := range left {
		if e.Name() != "COUNT" {
			t.Errorf("marker left behind: %s", e.Name())
		}
	}
	// Everything must be free now that every holder has exited.
	all := exec.Command(filepath.Join(bin, "withlock"), "--lock-dir", lockDir, "--paths", strings.Join(canon, ","),
		"--slots", fmt.Sprint(nslots), "--slot-file", slotTmpl, "--", "true")
	if out, err := all.CombinedOutput(); err != nil {
		t.Fatalf("locks not all free after the run: %v %s", err, out)
	}
}

// full skips a test of this package outside the full tier: the stress
// runs last 15 s each (STRESS_SECONDS).
func full(t *testing.T) {
	t.Helper()
	testbin.Full(t, "stress (tests/stress) runs for STRESS_SECONDS each")
}
