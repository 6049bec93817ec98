package tests

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/testbin"
)

// forbiddenDeps is what each binary must not link, by import path or
// import path prefix (ending in "/"). The lean binaries are what cron and
// the workers run on every call: what they leave out is start-up time
// saved on each one (README, "cron-gate: start-up cost").
var forbiddenDeps = map[string][]string{
	// No CLI library, no TOML decoder, no network code at all, no etcd.
	"./cmd/cron-gate": {"net", "net/http", "crypto/tls", "github.com/alecthomas/kong", "github.com/BurntSushi/toml", "go.etcd.io/", "google.golang.org/grpc"},
	"./cmd/withlock":  {"net", "net/http", "crypto/tls", "github.com/alecthomas/kong", "github.com/BurntSushi/toml", "go.etcd.io/", "google.golang.org/grpc"},
	// The full binaries link their libraries but no etcd client: a config
	// or a backend that needs one is handed to the -etcd binary.
	"./cmd/withlock-full":  {"net/http", "go.etcd.io/", "google.golang.org/grpc"},
	"./cmd/cron-gate-full": {"go.etcd.io/", "google.golang.org/grpc"},
}

// TestLeanBinariesDeps fails when a binary links what it must not (go list
// -deps: every package linked into it).
func TestLeanBinariesDeps(t *testing.T) {
	for pkg, bad := range forbiddenDeps {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = testbin.Module()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, b := range bad {
			var hits []string
			for _, dep := range deps {
				if dep == b || strings.HasSuffix(b, "/") && strings.HasPrefix(dep, b) {
					hits = append(hits, dep)
				}
			}
			if len(hits) > 0 {
				t.Errorf("%s links %s (%d packages: %s); see go list -deps %s", pkg, b, len(hits), strings.Join(hits[:min(3, len(hits))], " "), pkg)
			}
		}
	}
}

// TestPackageDocs fails when a package's doc comment is not one go doc
// shows: it must sit directly above the package clause of one file (a
// blank line between them, or a comment after the clause, hides it).
func TestPackageDocs(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{len .GoFiles}} {{if .Doc}}doc{{end}}", "./...")
	cmd.Dir = testbin.Module()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		// Packages of test files only have their doc in a _test.go file.
		if len(f) == 2 && f[1] != "0" {
			t.Errorf("package %s has no doc comment go doc shows", f[0])
		}
	}
}
