//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecEnvironDir: with Environ the command gets that environment and
// nothing of ours, and is looked up on its PATH; it starts in Dir, or in
// / when Dir cannot be entered (cron-gate trigger's HOME rule).
func TestSpecEnvironDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	t.Setenv("RUNNER_CALLER_ONLY", "leaked")
	for _, c := range []struct{ dir, want string }{
		{dir, dir},
		{filepath.Join(dir, "missing"), "/"},
		{out + "-file/x", "/"},
	} {
		os.Remove(out)
		spec := Spec{Argv: []string{"sh", "-c", `pwd > "$OUT"; env >> "$OUT"`},
			Environ: []string{"PATH=/usr/bin:/bin", "OUT=" + out}, Dir: c.dir}
		res, err := Run(spec, nil)
		if err != nil || res.Code != 0 {
			t.Fatalf("Dir %s: %+v %v", c.dir, res, err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		lines := string(data)
		if first, _, _ := strings.Cut(lines, "\n"); first != c.want {
			t.Errorf("Dir %s: started in %q, want %q", c.dir, first, c.want)
		}
		if strings.Contains(lines, "RUNNER_CALLER_ONLY") || !strings.Contains(lines, "\nOUT="+out+"\n") {
			t.Errorf("Dir %s: environment:\n%s", c.dir, lines)
		}
	}
}
