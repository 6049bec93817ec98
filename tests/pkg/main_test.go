//go:build pkg

// Package pkg tests what an operator installs (docs/install.md): the
// release artefacts of dist/release.sh (the .deb and static tarball of
// amd64, arm64 and armhf, the source tarball, SHA256SUMS), the Debian
// package installed, used and removed on this machine, the README's
// install command and crontab lines, and the unit tests and a smoke run
// of the ARM builds under qemu-user.
//
// It builds every architecture (minutes) and installs a package as root,
// in a mount namespace of its own where /usr, /etc and /var are overlays
// on a tmpfs (private_test.go): nothing reaches the host. It has the
// build tag pkg and runs on its own: .ci/pkg.sh, which
// tests/all.sh calls. Tools it needs and does not find (dpkg-deb,
// lintian, qemu-*-static, man, bash-completion, ...) make a test skip,
// which fails the run under CI.
package pkg

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	// root is the module's directory.
	root string
	// work is this test process's directory (mode 0755: the install test
	// runs commands as nobody below it); removed at the end.
	work string

	relOnce sync.Once
	relDir  string
	relErr  error
	// relHead is the commit the release was built from.
	relHead string
)

func TestMain(m *testing.M) {
	if os.Geteuid() == 0 && !inPrivate() {
		// private_test.go: every test runs in a mount namespace of its
		// own, where the host's /usr, /etc and /var are overlays.
		if code := rerunPrivate(); code >= 0 {
			os.Exit(code)
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go env GOMOD:", err)
		os.Exit(1)
	}
	root = filepath.Dir(strings.TrimSpace(string(out)))
	work, err = os.MkdirTemp("", "crongate-pkg-")
	if err == nil {
		err = os.Chmod(work, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if inPrivate() {
		layers := filepath.Join(work, "layers")
		if err := os.Mkdir(layers, 0o700); err == nil {
			err = overlayHost(layers)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pkg: the private overlays:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(work)
	os.Exit(code)
}

// arch is a package architecture, with Go's names and the ELF machine
// its binaries must be for.
type arch struct {
	deb, goarch, goarm, qemu string
	machine                  elf.Machine
	class                    elf.Class
}

// arches are the package architectures.
var arches = []arch{
	{"amd64", "amd64", "", "", elf.EM_X86_64, elf.ELFCLASS64},
	{"arm64", "arm64", "", "qemu-aarch64-static", elf.EM_AARCH64, elf.ELFCLASS64},
	{"armhf", "arm", "7", "qemu-arm-static", elf.EM_ARM, elf.ELFCLASS32},
}

// need returns the path of a program the test needs, or skips.
func need(t *testing.T, prog, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install -y %s; .ci/run installs it under CI)", prog, pkg)
	}
	return p
}

// release runs dist/release.sh once per test process and returns its
// output directory.
func release(t *testing.T) string {
	t.Helper()
	for _, p := range [][2]string{{"dpkg-deb", "dpkg"}, {"make", "make"}, {"git", "git"}, {"xz", "xz-utils"}} {
		need(t, p[0], p[1])
	}
	relOnce.Do(func() {
		relHead = head(t)
		relDir = filepath.Join(work, "release")
		start := time.Now()
		cmd := exec.Command("bash", "dist/release.sh", relDir)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "ALLOW_DIRTY=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			relErr = fmt.Errorf("dist/release.sh: %v\n%s", err, out)
			return
		}
		fmt.Printf("PKG dist/release.sh built every artefact in %v\n", time.Since(start).Round(time.Second))
	})
	if relErr != nil {
		t.Fatal(relErr)
	}
	return relDir
}

// version is internal/runner/VERSION.
func version(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "internal/runner/VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// head is the commit checked out.
func head(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// versionLine matches what --version of prog prints for the release's
// build: the version and the commit it was built from (with -dirty when
// the tree had uncommitted changes).
func versionLine(t *testing.T, prog string) *regexp.Regexp {
	h := relHead
	if h == "" {
		h = head(t)
	}
	return regexp.MustCompile(`^` + regexp.QuoteMeta(prog+" "+version(t)+" (commit "+h) + `(-dirty)?\)\n$`)
}

// run runs a command and returns its combined output, failing the test
// if it does not exit 0.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exitCode runs a command and returns its exit code and combined output;
// a command that cannot start fails the test.
func exitCode(t *testing.T, dir string, env []string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// debFiles lists the paths a .deb installs (without the leading "."),
// directories excluded.
func debFiles(t *testing.T, deb string) []string {
	t.Helper()
	var files []string
	for _, l := range strings.Split(run(t, "", nil, "dpkg-deb", "-c", deb), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || strings.HasPrefix(f[0], "d") {
			continue
		}
		files = append(files, strings.TrimPrefix(f[5], "."))
	}
	return files
}

// mkdir makes a directory below work, mode 0755, owned by uid (-1: root's).
func mkdir(t *testing.T, uid int, parts ...string) string {
	t.Helper()
	d := filepath.Join(append([]string{work}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// write writes a file.
func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}
