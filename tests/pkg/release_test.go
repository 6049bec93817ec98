//go:build pkg

package pkg

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// binaries are the four programs, in /usr/bin of the package and bin/ of
// a tarball.
var binaries = []string{"withlock", "withlock-etcd", "cron-gate", "cron-gate-etcd"}

// checkELF checks that every binary in dir is a static executable for
// the architecture, built with its GOARM.
func checkELF(t *testing.T, dir string, bins []string, machine elf.Machine, class elf.Class, goarm string) {
	t.Helper()
	for _, b := range bins {
		p := filepath.Join(dir, b)
		f, err := elf.Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if f.Machine != machine || f.Class != class {
			t.Errorf("%s is %v %v, want %v %v", p, f.Machine, f.Class, machine, class)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s is dynamically linked (%v)", p, prog.Type)
			}
		}
		f.Close()
		if strings.HasSuffix(b, "-etcd") {
			// The etcd binaries speak to etcd through etcd's own
			// client (docs/design.md), and link no etcd server.
			out, err := exec.Command("go", "version", "-m", p).Output()
			if err != nil || !strings.Contains(string(out), "\tdep\tgo.etcd.io/etcd/client/v3\t") {
				t.Errorf("%s does not link go.etcd.io/etcd/client/v3: %v\n%s", p, err, out)
			}
			if strings.Contains(string(out), "\tdep\tgo.etcd.io/etcd/server/") {
				t.Errorf("%s links etcd's server:\n%s", p, out)
			}
		}
		if goarm != "" {
			out, err := exec.Command("go", "version", "-m", p).Output()
			if err != nil || !strings.Contains(string(out), "GOARM="+goarm) {
				t.Errorf("%s: built without GOARM=%s: %v\n%s", p, goarm, err, out)
			}
		}
	}
}

// The release holds, for each architecture, two .debs (cron-gate, and
// cron-gate-etcd with the etcd backend's binaries, depending on it) and a
// static tarball whose binaries are for that architecture, plus the
// source tarball, and SHA256SUMS checks them all; each .deb has the
// fields, the files and the conffiles it should and lintian finds no
// error and no warning in it
// (the one override, statically-linked-binary, is in
// dist/deb/lintian-overrides with its reason).
func TestReleaseArtefacts(t *testing.T) {
	need(t, "sha256sum", "coreutils")
	lintian := need(t, "lintian", "lintian")
	dir := release(t)
	v := version(t)
	run(t, dir, nil, "sha256sum", "--strict", "-c", "SHA256SUMS")
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cron-gate-" + v + ".tar.gz"}
	for _, a := range arches {
		want = append(want, "cron-gate_"+v+"_"+a.deb+".deb", "cron-gate-etcd_"+v+"_"+a.deb+".deb", "cron-gate-"+v+"-linux-"+a.deb+".tar.gz")
	}
	var listed []string
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			listed = append(listed, f[1])
		}
	}
	slices.Sort(want)
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Errorf("SHA256SUMS lists %q, want %q", listed, want)
	}

	// What make install puts for PREFIX=/usr, as the package has it.
	var installed []string
	for _, f := range strings.Fields(run(t, root, nil, "make", "-s", "installed-files", "PREFIX=/usr")) {
		if strings.HasPrefix(f, "/usr/share/man/") {
			f += ".gz"
		}
		installed = append(installed, f)
	}
	installed = append(installed, unitFiles(t, filepath.Join(root, "dist/systemd"))...)
	// The etcd backend's binaries and their man page links are the
	// second package's, with its own copyright, changelog and override.
	var etcdFiles []string
	installed = slices.DeleteFunc(installed, func(f string) bool {
		etcd := strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(f, ".1.gz"), ".1"), "-etcd")
		if etcd {
			etcdFiles = append(etcdFiles, f)
		}
		return etcd
	})
	if len(etcdFiles) != 4 {
		t.Fatalf("make installed-files: the etcd backend's files are %q, want its two binaries and their two pages", etcdFiles)
	}
	etcdFiles = append(etcdFiles, "/usr/share/doc/cron-gate-etcd/copyright", "/usr/share/doc/cron-gate-etcd/changelog.gz",
		"/usr/share/lintian/overrides/cron-gate-etcd")
	slices.Sort(etcdFiles)
	installed = append(installed, "/etc/cron-gate/config.toml", "/usr/share/doc/cron-gate/copyright",
		"/usr/share/doc/cron-gate/changelog.gz", "/usr/share/lintian/overrides/cron-gate")
	// The reference the man pages point to: README.md and docs/*.md.
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v %q", err, docs)
	}
	for _, d := range append(docs, "README.md") {
		installed = append(installed, "/usr/share/doc/cron-gate/"+filepath.Base(d)+".gz")
	}
	slices.Sort(installed)

	for _, a := range arches {
		t.Run(a.deb, func(t *testing.T) {
			for _, p := range []struct {
				name, conffiles string
				fields          map[string]string
				files           []string
			}{
				{"cron-gate", "/etc/cron-gate/config.toml\n", map[string]string{"Package": "cron-gate", "Version": v, "Architecture": a.deb}, installed},
				{"cron-gate-etcd", "", map[string]string{"Package": "cron-gate-etcd", "Version": v, "Architecture": a.deb,
					"Source": "cron-gate", "Depends": "cron-gate (= " + v + ")"}, etcdFiles},
			} {
				checkDeb(t, lintian, filepath.Join(dir, p.name+"_"+v+"_"+a.deb+".deb"), a, p.fields, p.files, p.conffiles)
			}

			tgz := filepath.Join(dir, "cron-gate-"+v+"-linux-"+a.deb+".tar.gz")
			tx := t.TempDir()
			run(t, "", nil, "tar", "-C", tx, "-xzf", tgz)
			top := filepath.Join(tx, "cron-gate-"+v+"-linux-"+a.deb)
			checkELF(t, filepath.Join(top, "bin"), binaries, a.machine, a.class, a.goarm)
			for _, f := range []string{"share/man/man1/withlock.1", "share/man/man5/cron-gate.toml.5", "share/bash-completion/completions/cron-gate",
				"share/zsh/site-functions/_withlock", "share/fish/vendor_completions.d/cron-gate.fish", "share/doc/cron-gate/copyright",
				"share/doc/cron-gate/withlock.md", "share/doc/cron-gate/cron-gate.md", "share/doc/cron-gate/config.md", "share/doc/cron-gate/exit-codes.md"} {
				if _, err := os.Stat(filepath.Join(top, f)); err != nil {
					t.Errorf("%s: %v", filepath.Base(tgz), err)
				}
			}
			if st, err := os.Stat(tgz); err == nil {
				fmt.Printf("PKG %s: %d bytes (%.1f MB)\n", filepath.Base(tgz), st.Size(), float64(st.Size())/1e6)
			}
		})
	}
}

// The source tarball builds without git: make there links the version
// and the commit the tarball was made from (the COMMIT file git archive
// filled in), which --version prints.
func TestSourceTarball(t *testing.T) {
	dir := release(t)
	v := version(t)
	src := t.TempDir()
	run(t, "", nil, "tar", "-C", src, "-xzf", filepath.Join(dir, "cron-gate-"+v+".tar.gz"))
	tree := filepath.Join(src, "cron-gate-"+v)
	if _, err := os.Stat(filepath.Join(tree, ".git")); err == nil {
		t.Fatal("the source tarball holds .git")
	}
	commit, err := os.ReadFile(filepath.Join(tree, "COMMIT"))
	if err != nil || !strings.HasPrefix(string(commit), relHead+" ") {
		t.Fatalf("COMMIT in the source tarball: %q, %v; want %s and its date", commit, err, relHead)
	}
	// GIT_DIR/GIT_CEILING_DIRECTORIES: no git repository is found from
	// there even if the temp dir is inside one.
	env := append(os.Environ(), "GIT_CEILING_DIRECTORIES="+src, "GIT_DIR=/nonexistent")
	run(t, tree, env, "make", "-s", "bin")
	want := "withlock " + v + " (commit " + relHead + ")\n"
	if out := run(t, tree, env, "./build/bin/withlock", "--version"); out != want {
		t.Errorf("withlock --version from the source tarball: %q, want %q", out, want)
	}
	if out := run(t, tree, env, "./build/bin/cron-gate", "--version"); out != strings.Replace(want, "withlock", "cron-gate", 1) {
		t.Errorf("cron-gate --version from the source tarball: %q", out)
	}
}

// unitFiles lists where the package puts the files of a dist/systemd
// directory: each file in it in /lib/systemd/system, each file of its
// subdirectories (examples) below /usr/share/doc/cron-gate/systemd.
func unitFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) && p == dir {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !strings.Contains(rel, "/") {
			files = append(files, "/lib/systemd/system/"+rel)
		} else {
			files = append(files, "/usr/share/doc/cron-gate/systemd/"+rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The package carries every file of dist/systemd in /lib/systemd/system
// and the files of its subdirectories (examples) in the documentation,
// and nothing else from there; shown with a directory of its own
// (SYSTEMD_UNITS), so that the mechanism is proven whether or not
// dist/systemd exists yet (TestReleaseArtefacts checks the real one).
func TestSystemdUnits(t *testing.T) {
	need(t, "dpkg-deb", "dpkg")
	need(t, "make", "make")
	units := t.TempDir()
	write(t, filepath.Join(units, "cron-gate-check.service"), "[Unit]\nDescription=cron-gate watchdog\n\n[Service]\nType=oneshot\nExecStart=/usr/bin/cron-gate check\n", 0o644)
	write(t, filepath.Join(units, "cron-gate-check.timer"), "[Unit]\nDescription=cron-gate watchdog\n\n[Timer]\nOnCalendar=*:0/5\n\n[Install]\nWantedBy=timers.target\n", 0o644)
	write(t, filepath.Join(units, "cron-gate-serve.socket"), "[Socket]\nListenStream=127.0.0.1:8080\n", 0o644)
	write(t, filepath.Join(units, "examples", "blog-translate.timer"), "[Timer]\nOnCalendar=hourly\n", 0o644)
	out := t.TempDir()
	cmd := exec.Command("bash", "dist/deb/build.sh", "amd64", out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SYSTEMD_UNITS="+units)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dist/deb/build.sh amd64 with SYSTEMD_UNITS: %v\n%s", err, b)
	}
	debs, _ := filepath.Glob(filepath.Join(out, "cron-gate_*.deb"))
	if all, _ := filepath.Glob(filepath.Join(out, "*.deb")); len(debs) != 1 || len(all) != 2 {
		t.Fatalf("build.sh made %q, want cron-gate's and cron-gate-etcd's", all)
	}
	var got []string
	for _, f := range debFiles(t, debs[0]) {
		if strings.HasPrefix(f, "/lib/systemd/") || strings.HasPrefix(f, "/usr/share/doc/cron-gate/systemd/") {
			got = append(got, f)
		}
	}
	slices.Sort(got)
	want := []string{"/lib/systemd/system/cron-gate-check.service", "/lib/systemd/system/cron-gate-check.timer",
		"/lib/systemd/system/cron-gate-serve.socket", "/usr/share/doc/cron-gate/systemd/examples/blog-translate.timer"}
	if !slices.Equal(got, want) {
		t.Errorf("units in the package: %q, want %q", got, want)
	}
	if w := unitFiles(t, units); !slices.Equal(w, want) {
		t.Errorf("unitFiles: %q, want %q", w, want)
	}
}

// checkDeb checks one .deb of a release: its control fields, the files it
// installs, its conffiles, that its binaries are for the architecture,
// and lintian's verdict; it prints its size.
func checkDeb(t *testing.T, lintian, deb string, a arch, fields map[string]string, files []string, conffiles string) {
	t.Helper()
	for field, want := range fields {
		if got := strings.TrimSpace(run(t, "", nil, "dpkg-deb", "-f", deb, field)); got != want {
			t.Errorf("%s: %s is %q, want %q", deb, field, got, want)
		}
	}
	got := debFiles(t, deb)
	slices.Sort(got)
	if !slices.Equal(got, files) {
		t.Errorf("%s installs\n%q\nwant\n%q", deb, got, files)
	}
	ctl := filepath.Join(t.TempDir(), "control")
	run(t, "", nil, "dpkg-deb", "-e", deb, ctl)
	if b, err := os.ReadFile(filepath.Join(ctl, "conffiles")); string(b) != conffiles || (err != nil) != (conffiles == "") {
		t.Errorf("%s: conffiles %q, %v; want %q", filepath.Base(deb), b, err, conffiles)
	}
	x := filepath.Join(t.TempDir(), "x")
	run(t, "", nil, "dpkg-deb", "-x", deb, x)
	var bins []string
	for _, f := range files {
		if b, ok := strings.CutPrefix(f, "/usr/bin/"); ok {
			bins = append(bins, b)
		}
	}
	checkELF(t, filepath.Join(x, "usr/bin"), bins, a.machine, a.class, a.goarm)
	cmd := exec.Command(lintian, "--fail-on", "error,warning", "--pedantic", "--info", deb)
	out, err := cmd.CombinedOutput()
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) > 2 && l[1] == ':' {
			tags = append(tags, l)
		}
	}
	if err != nil || slices.ContainsFunc(tags, func(l string) bool { return l[0] == 'E' || l[0] == 'W' }) {
		t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
	}
	st, err := os.Stat(deb)
	if err != nil {
		t.Fatal(err)
	}
	size := strings.TrimSpace(run(t, "", nil, "dpkg-deb", "-f", deb, "Installed-Size"))
	fmt.Printf("PKG %s: %d bytes (%.1f MB), installed %s KiB; lintian: %d tags beyond the override (%s)\n",
		filepath.Base(deb), st.Size(), float64(st.Size())/1e6, size, len(tags), strings.Join(tags, "; "))
}
