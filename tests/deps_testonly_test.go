package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/testbin"
)

// testOnlyDeps are modules only tests may use (docs/design.md: testscript
// "is a test-only dependency and is not linked into the binaries"; so is
// chromedp, with its cdproto and JSON module, for the browser tests).
var testOnlyDeps = []string{"github.com/rogpeppe/go-internal/", "github.com/chromedp/", "github.com/go-json-experiment/json"}

// TestTestOnlyDepsNotLinked fails when any binary under cmd/ links a
// test-only module (go list -deps: every package linked into it).
func TestTestOnlyDepsNotLinked(t *testing.T) {
	cmds, err := filepath.Glob(filepath.Join(testbin.Module(), "cmd", "*"))
	if err != nil || len(cmds) < 4 {
		t.Fatalf("found %d binaries under cmd/ (%v): the glob is wrong", len(cmds), err)
	}
	for _, dir := range cmds {
		pkg := "./cmd/" + filepath.Base(dir)
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = testbin.Module()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range testOnlyDeps {
				if strings.HasPrefix(dep, bad) {
					t.Errorf("%s links the test-only package %s; see go list -deps %s", pkg, dep, pkg)
				}
			}
		}
	}
}
