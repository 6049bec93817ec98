package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/debiancron"
	"github.com/crongate/crongate/tests/testbin"
)

// adoptExamples are the crontabs TestAdoptExamples adopts (docs/adopt.md
// shows the same runs): Debian's example from crontab(5), a 30-line
// operator's crontab, a system crontab of /etc/cron.d with a user field.
var adoptExamples = []struct {
	file   string
	system bool
	wraps  int // lines wrapped
}{
	{"debian.crontab", false, 5},
	{"operator.crontab", false, 13},
	{"blog.cron.d", true, 3},
}

// adoptRun runs cron-gate adopt ARGS with a private config and state dir,
// and returns its stdout, stderr and exit code.
func adoptRun(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "cron-gate"), append([]string{"adopt"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CRON_GATE_CONFIG="+filepath.Join(dir, "config.toml"),
		"CRON_GATE_STATE_DIR="+filepath.Join(dir, "state"), "CRON_GATE_CACHE_DIR="+filepath.Join(dir, "cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cron-gate adopt %q: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestAdoptExamples: on each example, adopt prints a diff and changes
// nothing; --apply --declare installs it atomically (nothing else left in
// the directory but the backup, with the original's bytes and mode) and
// declares the gates; a second run prints nothing and changes nothing;
// and, in the full tier, Debian's crontab -n accepts every result.
func TestAdoptExamples(t *testing.T) {
	var adopted []string
	for _, ex := range adoptExamples {
		orig, err := os.ReadFile(filepath.Join("testdata", "adopt", ex.file))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		f := filepath.Join(dir, ex.file)
		os.WriteFile(f, orig, 0o640)
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte("# kept\n"), 0o644)
		args := []string{"--file", ex.file}
		if ex.system {
			args = append(args, "--system")
		}
		diff, stderr, code := adoptRun(t, dir, args...)
		if code != 0 || !strings.HasPrefix(diff, "--- "+ex.file+"\n+++ "+ex.file+"\n@@ ") {
			t.Fatalf("%s: exit %d, diff %q, stderr %s", ex.file, code, diff, stderr)
		}
		if n := strings.Count(diff, "\n+") - 1; n != ex.wraps {
			t.Errorf("%s: %d lines wrapped, want %d:\n%s", ex.file, n, ex.wraps, diff)
		}
		if now, _ := os.ReadFile(f); !bytes.Equal(now, orig) {
			t.Fatalf("%s: changed without --apply", ex.file)
		}
		_, stderr, code = adoptRun(t, dir, append(args, "--apply", "--declare")...)
		if code != 0 {
			t.Fatalf("%s --apply: exit %d: %s", ex.file, code, stderr)
		}
		entries, _ := os.ReadDir(dir)
		var backup string
		for _, e := range entries {
			switch n := e.Name(); {
			case strings.HasPrefix(n, ex.file+".cron-gate-backup-"):
				backup = n
			case n != ex.file && n != "config.toml" && n != "state" && n != "cache":
				t.Errorf("%s --apply left %s behind", ex.file, n)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, backup)); backup == "" || !bytes.Equal(b, orig) {
			t.Fatalf("%s --apply: no backup with the original's bytes (found %q)", ex.file, backup)
		}
		for _, n := range []string{ex.file, backup} {
			if fi, _ := os.Stat(filepath.Join(dir, n)); fi.Mode().Perm() != 0o640 {
				t.Errorf("%s: mode %v, want the original's 0640", n, fi.Mode().Perm())
			}
		}
		cfg, _ := os.ReadFile(filepath.Join(dir, "config.toml"))
		if !strings.HasPrefix(string(cfg), "# kept\n") || strings.Count(string(cfg), "[gates.") != ex.wraps {
			t.Errorf("%s --declare: config is\n%s", ex.file, cfg)
		}
		text, _ := os.ReadFile(f)
		again, stderr2, code := adoptRun(t, dir, args...)
		if code != 0 || again != "" {
			t.Errorf("%s: second run: exit %d, diff %q", ex.file, code, again)
		}
		if strings.Contains(stderr2, "nothing to adopt") {
			t.Errorf("%s: a second run not at a terminal said %q", ex.file, stderr2)
		}
		if now, _ := os.ReadFile(f); !bytes.Equal(now, text) {
			t.Errorf("%s: the second run changed the file", ex.file)
		}
		if ex.system { // crontab -n reads a user's format: drop the user field
			text = []byte(strings.NewReplacer("  www-data  ", " ", "    root      ", " ", "    root\t", " ").Replace(string(text)))
		}
		adopted = append(adopted, string(orig), string(text))
	}
	testbin.Full(t, "Debian's crontab -n")
	if !debiancron.Available() {
		t.Skip("Debian's crontab (with -n) is not installed: apt-get install cron")
	}
	res, err := debiancron.Check(t.TempDir(), adopted)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Accepted {
			t.Errorf("crontab -n refuses (%s):\n%s", r.Word, adopted[i])
		}
	}
}

// TestAdoptUserCrontab: the user's crontab through Debian's crontab(1),
// -l and -, for root's own and for --user: as root, in a mount namespace
// with a private tmpfs on the spool dir (as debiancron does), so the
// host's crontabs are never read or written.
func TestAdoptUserCrontab(t *testing.T) {
	testbin.Full(t, "Debian's crontab(1), as root in a mount namespace")
	if os.Geteuid() != 0 {
		t.Skip("needs root: crontab(1) is tested in a private mount namespace, which only root can make")
	}
	if !debiancron.Available() {
		t.Skip("Debian's crontab is not installed: apt-get install cron")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.toml"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "tab"), []byte("*/5 * * * * cd /srv/x && ./job.py >> log 2>&1\n"), 0o644)
	script := `set -e
mount -t tmpfs -o mode=1730 tmpfs ` + debiancron.SpoolDir + `
crontab tab
crontab -u nobody tab
cron-gate adopt > diff
cron-gate adopt --apply > /dev/null
cron-gate adopt --user nobody --apply > /dev/null
crontab -l > root.after
crontab -u nobody -l > nobody.after
cron-gate adopt > second
ls state/crontab-backups > backups
`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"),
		"CRON_GATE_CONFIG="+filepath.Join(dir, "config.toml"), "CRON_GATE_STATE_DIR="+filepath.Join(dir, "state"),
		"CRON_GATE_CACHE_DIR="+filepath.Join(dir, "cache"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "*/5 * * * * cron-gate job -- /bin/sh -c 'cd /srv/x && ./job.py >> log 2>&1'\n"
	read := func(n string) string { b, _ := os.ReadFile(filepath.Join(dir, n)); return string(b) }
	if d := read("diff"); !strings.Contains(d, "+"+want) || !strings.HasPrefix(d, "--- crontab:root\n") {
		t.Errorf("diff of root's crontab:\n%s", d)
	}
	for _, n := range []string{"root.after", "nobody.after"} {
		if got := read(n); !strings.HasSuffix(got, want) {
			t.Errorf("%s: crontab -l after --apply:\n%s", n, got)
		}
	}
	if s := read("second"); s != "" {
		t.Errorf("second run printed a diff:\n%s", s)
	}
	if b := strings.Fields(read("backups")); len(b) != 2 || !strings.HasPrefix(b[0], "nobody.") || !strings.HasPrefix(b[1], "root.") {
		t.Errorf("backups: %q, want one of nobody's and one of root's", b)
	}
}
