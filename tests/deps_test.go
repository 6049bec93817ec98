package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/testbin"
)

// forbiddenDeps is what each binary must not link, by import path or
// import path prefix (ending in "/"): no etcd client outside the -etcd
// companions, and no network code in withlock.
var forbiddenDeps = map[string][]string{
	// cron-gate is one binary for every local feature (docs/design.md,
	// "One cron-gate binary"): kong, the TOML decoder and net/http (the
	// dashboard, healthchecks pings), but no etcd client: a config that
	// needs one is handed to cron-gate-etcd.
	"./cmd/cron-gate": {"go.etcd.io/", "google.golang.org/grpc"},
	// withlock is one binary for every local line: it links kong (for
	// help, errors and rare forms; docs/design.md, "One withlock binary")
	// but no TOML decoder, no network code and no etcd.
	"./cmd/withlock": {"net", "net/http", "crypto/tls", "github.com/BurntSushi/toml", "go.etcd.io/", "google.golang.org/grpc"},
	// The etcd binaries speak to etcd through etcd's own client
	// (requiredDeps), never its server.
	"./cmd/withlock-etcd":  {"go.etcd.io/etcd/server/"},
	"./cmd/cron-gate-etcd": {"go.etcd.io/etcd/server/"},
}

// requiredDeps is what a binary must link: the etcd binaries talk to
// etcd through go.etcd.io/etcd/client/v3 (docs/design.md), not a client
// of our own.
var requiredDeps = map[string][]string{
	"./cmd/withlock-etcd":  {"go.etcd.io/etcd/client/v3"},
	"./cmd/cron-gate-etcd": {"go.etcd.io/etcd/client/v3"},
}

// TestLeanBinariesDeps fails when a binary links what it must not, or
// not what it must (go list -deps: every package linked into it).
func TestLeanBinariesDeps(t *testing.T) {
	for pkg, bad := range forbiddenDeps {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = testbin.Module()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, r := range requiredDeps[pkg] {
			if !slices.Contains(deps, r) {
				t.Errorf("%s does not link %s; see go list -deps %s", pkg, r, pkg)
			}
		}
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

// TestCachedRunPath: a `cron-gate NAME -- COMMAND` line whose config is
// cached runs through at most 10 of the module's packages, in one
// process (docs/design.md, "The packages"): cmd/cron-gate's cachedRun
// and Run path call only gate, runner and safetext (and the standard
// library), whose packages of ours, with cmd/cron-gate, are counted; the
// rest of the binary (package crongate: kong, the TOML decoder, the
// dashboard) is linked but never called on that path.
func TestCachedRunPath(t *testing.T) {
	const most = 10
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(testbin.Module(), "cmd/cron-gate/main.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{} // name -> import path
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		imports[p[strings.LastIndex(p, "/")+1:]] = p
	}
	used := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "cachedRun" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
					used[imports[id.Name]] = true
				}
			}
			return true
		})
	}
	// run's cached branch: runner.Notify and gate.Run.
	used["github.com/crongate/crongate/gate"], used["github.com/crongate/crongate/internal/runner"] = true, true
	var ours []string
	for p := range used {
		if p == "github.com/crongate/crongate/internal/crongate" {
			t.Errorf("cachedRun calls package crongate: the cached run path must not go through kong or the TOML decoder")
		}
		if strings.HasPrefix(p, "github.com/crongate/crongate/") {
			ours = append(ours, "./"+strings.TrimPrefix(p, "github.com/crongate/crongate/"))
		}
	}
	sort.Strings(ours)
	cmd := exec.Command("go", append([]string{"list", "-deps"}, ours...)...)
	cmd.Dir = testbin.Module()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", ours, err)
	}
	path := []string{"github.com/crongate/crongate/cmd/cron-gate"}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/crongate/crongate/") {
			path = append(path, p)
		}
	}
	t.Logf("a cached run crosses %d packages: %s", len(path), strings.Join(path, " "))
	if len(path) > most {
		t.Errorf("a cached run crosses %d of our packages, over %d: %s", len(path), most, strings.Join(path, " "))
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

// linuxOnly is the identifier cmd/*/other_os.go refers to and no file
// defines: a build for another OS stops at it.
const linuxOnly = "undefined: cron_gate_and_withlock_build_on_linux_only"

// TestOtherOSBuildFails: the code is Linux-only, and a build for another
// OS says so in one line per binary instead of pages of type errors: the
// Linux-only packages carry //go:build linux, the binaries a !linux file
// that names the reason. Building ./... for darwin also catches a new
// file or package that lacks the constraint (an import of a Linux-only
// package, or a type error, from a file built there).
func TestOtherOSBuildFails(t *testing.T) {
	for _, c := range []struct {
		goos string
		pkgs []string
		n    int // binaries that must fail
	}{
		{"darwin", []string{"./cmd/withlock"}, 1},
		{"darwin", []string{"./..."}, 4},
	} {
		cmd := exec.Command("go", "build", "-o", t.TempDir(), "--")
		cmd.Args = append(cmd.Args, c.pkgs...)
		cmd.Dir = testbin.Module()
		cmd.Env = append(os.Environ(), "GOOS="+c.goos, "GOARCH=amd64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("GOOS=%s go build %s succeeded", c.goos, strings.Join(c.pkgs, " "))
			continue
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			switch {
			case strings.HasPrefix(line, "# github.com/crongate/crongate/cmd/"):
			case strings.HasSuffix(line, linuxOnly) && strings.HasPrefix(line, "cmd/"):
				n++
			default:
				t.Errorf("GOOS=%s go build %s: unexpected line %q", c.goos, strings.Join(c.pkgs, " "), line)
			}
		}
		if n != c.n {
			t.Errorf("GOOS=%s go build %s: %d binaries refused with %q, want %d:\n%s", c.goos, strings.Join(c.pkgs, " "), n, linuxOnly, c.n, out)
		}
	}
}
