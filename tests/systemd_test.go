package tests

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/cronexpr"
	"github.com/crongate/crongate/tests/testbin"
)

// systemdUnits are the unit files shipped in dist/systemd (the examples
// too), by name.
func systemdUnits(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join(testbin.Module(), "dist", "systemd")
	units := map[string]string{}
	for _, pat := range []string{"*.service", "*.timer", "examples/*.service", "examples/*.timer"} {
		files, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			units[filepath.Base(f)] = string(data)
		}
	}
	for _, want := range []string{"cron-gate-serve.service", "cron-gate-check.service", "cron-gate-check.timer",
		"blog-translate.service", "blog-translate.timer"} {
		if units[want] == "" {
			t.Fatalf("dist/systemd has no %s", want)
		}
	}
	return units
}

// needSystemdAnalyze returns systemd-analyze, or skips; under CI (which
// installs Debian's systemd, .ci/run) a missing one fails.
func needSystemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze (Debian's systemd) is not installed; CI needs it")
		}
		t.Skip("systemd-analyze (Debian's systemd) is not installed")
	}
	return p
}

// TestSystemdUnitsVerify: systemd itself finds nothing to say of the unit
// files (systemd-analyze verify: unknown keys, bad values, a timer
// without its service, an ExecStart that is not executable). It runs
// without systemd as PID 1 (in a container too); the units' /usr/bin/
// binaries are those built from this tree, and man pages are not looked
// for (--man=no: they come with the package).
func TestSystemdUnitsVerify(t *testing.T) {
	testbin.Full(t, "systemd-analyze (Debian's systemd)")
	analyze := needSystemdAnalyze(t)
	dir := t.TempDir()
	var files []string
	for name, text := range systemdUnits(t) {
		text = strings.ReplaceAll(text, "/usr/bin/cron-gate ", binDir+"/cron-gate ")
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The check is not vacuous: a misspelt key is reported.
	bad := filepath.Join(dir, "bad.service")
	os.WriteFile(bad, []byte("[Service]\nType=oneshot\nExecStart="+binDir+"/cron-gate check\nSucessExitStatus=75\n"), 0o644)
	if out, _ := exec.Command(analyze, "verify", "--man=no", bad).CombinedOutput(); !strings.Contains(string(out), "SucessExitStatus") {
		t.Fatalf("systemd-analyze verify says nothing of a misspelt key: %s", out)
	}
}

// TestSystemdUnitsExitStatus: what makes a skip and a stop not count as
// failures (docs/systemd.md): the job's unit takes 75 (skipped) and 143
// (cron-gate's exit when systemctl stop's TERM ended the command) as
// success, and sends TERM to cron-gate only (KillMode=mixed), which
// forwards it and records the run's end; the watchdog's unit takes 143.
func TestSystemdUnitsExitStatus(t *testing.T) {
	testbin.Full(t, "systemd-analyze (Debian's systemd)")
	units := systemdUnits(t)
	for name, want := range map[string][]string{
		"blog-translate.service":  {"SuccessExitStatus=75 143", "KillMode=mixed", "Type=oneshot", "ExecStart=/usr/bin/cron-gate translate -- "},
		"cron-gate-check.service": {"SuccessExitStatus=143", "ExecStart=/usr/bin/cron-gate check"},
		"cron-gate-serve.service": {"ExecStart=/usr/bin/cron-gate serve"},
	} {
		for _, w := range want {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w)).MatchString(units[name]) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
}

// TestSystemdTimersAsCron: each timer fires when its crontab line would,
// by systemd's own reckoning (systemd-analyze calendar) against
// cronexpr's (Debian's cron): the next 12 times in UTC.
func TestSystemdTimersAsCron(t *testing.T) {
	testbin.Full(t, "systemd-analyze (Debian's systemd)")
	analyze := needSystemdAnalyze(t)
	units := systemdUnits(t)
	for timer, cron := range map[string]string{
		"cron-gate-check.timer": "*/5 * * * *",
		"blog-translate.timer":  "0 */4 * * *",
	} {
		m := regexp.MustCompile(`(?m)^OnCalendar=(.+)$`).FindStringSubmatch(units[timer])
		if m == nil {
			t.Fatalf("%s has no OnCalendar", timer)
		}
		cmd := exec.Command(analyze, "calendar", "--iterations=12", m[1])
		cmd.Env = append(os.Environ(), "TZ=UTC")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("systemd-analyze calendar %q: %v\n%s", m[1], err, out)
		}
		var got []time.Time
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		re := regexp.MustCompile(`(?:Next elapse|Iter\. #\d+): \w+ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				tm, err := time.Parse("2006-01-02 15:04:05", m[1])
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, tm)
			}
		}
		if len(got) != 12 {
			t.Fatalf("%s: %d times from systemd-analyze calendar:\n%s", timer, len(got), out)
		}
		s := cronexpr.MustParse(cron)
		at := got[0].Add(-time.Second)
		for i, g := range got {
			at = s.Next(at, time.UTC)
			if !at.Equal(g) {
				t.Errorf("%s, time %d: systemd %v, cron (%s) %v", timer, i+1, g, cron, at)
			}
		}
	}
}
