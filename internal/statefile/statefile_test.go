package statefile

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
)

func openDir(t *testing.T) (*safeopen.Dir, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := safeopen.OpenDir(root, safeopen.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, root
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// deadPid returns the PID of a process that has exited.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestWrite(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "tmpfile", true: "named"}[named], func(t *testing.T) {
			d, root := openDir(t)
			old := unix.Umask(0o077)
			defer unix.Umask(old)
			for i, o := range []Options{{Perm: 0o644}, {Perm: 0o600, NoSync: true}} {
				data := []byte("v" + strconv.Itoa(i))
				var err error
				if named {
					err = writeNamed(d, "state.json", data, o)
				} else if err = writeTmpfile(d, "state.json", data, o); errors.Is(err, errNoTmpfile) {
					t.Skipf("%s has no O_TMPFILE (or /proc is missing): Write falls back to named temps", root)
				}
				if err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(filepath.Join(root, "state.json"))
				if err != nil || fi.Mode().Perm() != o.Perm {
					t.Errorf("mode %v %v, want exactly %v whatever the umask", fi.Mode(), err, o.Perm)
				}
				if b, _ := os.ReadFile(filepath.Join(root, "state.json")); string(b) != string(data) {
					t.Errorf("content %q, want %q", b, data)
				}
			}
			if got := names(t, root); len(got) != 1 {
				t.Errorf("left in the dir: %v, want only state.json", got)
			}
		})
	}
}

// TestRemoveStaleTemps: temps left by killed writers go at the next write
// of the same file; a live writer's recent temp and other files' temps
// stay.
func TestRemoveStaleTemps(t *testing.T) {
	d, root := openDir(t)
	dead := deadPid(t)
	plant := func(name string, age time.Duration) {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		os.Chtimes(p, when, when)
	}
	self := strconv.Itoa(os.Getpid())
	plant(".pauses.json.tmp-"+strconv.Itoa(dead)+"-abc", 0)    // dead writer: goes
	plant(".pauses.json.tmp-"+self+"-abc", 0)                  // live writer, recent: stays
	plant(".pauses.json.tmp-"+self+"-old", 2*StaleAfter)       // live but old: goes
	plant(".pauses.json.tmp-1234567", 0)                       // an older release's, recent: stays
	plant(".pauses.json.tmp-7654321", 2*StaleAfter)            // an older release's, old: goes
	plant(".other.json.tmp-"+strconv.Itoa(dead)+"-abc", 0)     // another file's: not this writer's business
	plant(".k-g.tmp-1.json.tmp-"+strconv.Itoa(dead)+"-abc", 0) // a cache entry's (gate "g.tmp-1")
	if err := Write(d, "pauses.json", []byte("{}"), Options{Perm: 0o644}); err != nil {
		t.Fatal(err)
	}
	want := []string{".k-g.tmp-1.json.tmp-" + strconv.Itoa(dead) + "-abc", ".other.json.tmp-" + strconv.Itoa(dead) + "-abc",
		".pauses.json.tmp-1234567", ".pauses.json.tmp-" + self + "-abc", "pauses.json"}
	sort.Strings(want)
	if got := names(t, root); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("after a write:\n got %v\nwant %v", got, want)
	}
	// AnyTarget (the cache): every dead writer's temp goes.
	if err := Write(d, "k2-g.json", []byte("{}"), Options{Perm: 0o600, AnyTarget: true}); err != nil {
		t.Fatal(err)
	}
	want = []string{".pauses.json.tmp-1234567", ".pauses.json.tmp-" + self + "-abc", "k2-g.json", "pauses.json"}
	sort.Strings(want) // the order of the two temps depends on this test's pid
	if got := names(t, root); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("after an AnyTarget write:\n got %v\nwant %v", got, want)
	}
}

// TestUpdateSpecial: a FIFO where the state file should be is an error at
// once, not a hang, and nothing is written.
func TestUpdateSpecial(t *testing.T) {
	d, root := openDir(t)
	if err := unix.Mkfifo(filepath.Join(root, "s.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- Update(context.Background(), d, ".s.lock", "s.json", 1<<20, 0, Options{Perm: 0o644}, func(old []byte) ([]byte, error) {
			return []byte("new"), nil
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, safeopen.ErrNotRegular) {
			t.Errorf("Update on a FIFO: %v, want ErrNotRegular", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Update on a FIFO hung")
	}
	if fi, _ := os.Lstat(filepath.Join(root, "s.json")); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	// A file over the limit: refused.
	os.WriteFile(filepath.Join(root, "big.json"), make([]byte, 100), 0o644)
	err := Update(context.Background(), d, ".s.lock", "big.json", 99, 0, Options{Perm: 0o644}, func([]byte) ([]byte, error) { return []byte("x"), nil })
	if !errors.Is(err, safeopen.ErrTooLarge) {
		t.Errorf("Update over the limit: %v, want ErrTooLarge", err)
	}
}
