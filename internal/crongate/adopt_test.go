//go:build linux

package crongate

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/watch"
)

func noneTaken(string) bool { return false }

func TestAdoptDeriveName(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"cd /srv/x && ./job.py >> log 2>&1", "job"},
		{"/usr/local/bin/Backup-DB.sh --full", "backup-db"},
		{"python3 -u /srv/report.py | mail -s x ops", "report"},
		{"nice -n 10 ionice -c3 /usr/bin/rsync -a /a /b", "rsync"},
		{"FOO=1 BAR=2 /opt/sync_all", "sync_all"},
		{"withlock --paths /a -- python3 terms.py", "terms"},
		{"timeout 30m /srv/bin/pull", "pull"},
		{"flock -n /tmp/x.lock /srv/bin/pull", "pull"},
		{"cd / && run-parts --report /etc/cron.hourly", "cron.hourly"},
		{"/srv/run.sh", "run-job"},
		{"'/srv/my tool'", "my"},
		{"python3 -m mypkg.main", "mypkg"},
		{">/dev/null", "job"},
		{"/srv/ÜBER", "ber"},
	} {
		if got := deriveName(c.text); got != c.want {
			t.Errorf("deriveName(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	taken := map[string]bool{"job": true, "job-2": true}
	if got := uniqueName("job", func(s string) bool { return taken[s] }); got != "job-3" {
		t.Errorf("uniqueName = %q, want job-3", got)
	}
}

// shellRun runs argv as cron would run a job here and returns what it
// printed (stdout and stderr apart, each one's lines sorted: a background
// job's lines come in the scheduler's order) and its exit code.
func shellRun(t *testing.T, dir string, argv []string, stdin string) string {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "X=ex", "CRON_GATE_ADOPT_TEST=1"}
	c.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	sorted := func(s string) string {
		l := strings.Split(s, "\n")
		slices.Sort(l)
		return strings.Join(l, "\n")
	}
	return fmt.Sprintf("stdout %q\nstderr %q\nexit %d", sorted(stdout.String()), sorted(stderr.String()), code)
}

// TestAdoptQuotingProperty: for random command texts, /bin/sh running
// what cron makes of the original and what cron makes of the adopted
// command's argv after "--" prints the same thing. The adopted argv is
// got the way cron-gate gets it: the outer shell runs `printf` on the
// words after cron-gate NAME --, and its output (NUL-separated) is run.
func TestAdoptQuotingProperty(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f1"), []byte("one\n"), 0o644)
	alphabet := []string{"echo", " ", "a", "'", `"`, `\`, "$X", "$", "*", "?", "f1", ">", "2>&1", "cat", "&&", ";", "`", "(", ")", "{", "}", "~", "#", "\\%", "\\\\", "!", "=", "\t", "-c", "-n", "tr a b", "$(echo s)", "<"}
	// No | or lone &: processes side by side print in the scheduler's
	// order; the fixed texts below have pipes whose output is one order.
	fixed := []string{"echo a | tr a b 2>&1", "cd / && pwd | cat >&2", `echo 'it'\''s' | wc -c`, "x=1; echo \"$x\" \\% | tr 1 2"}
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := 0; i < n+len(fixed); i++ {
		var b strings.Builder
		b.WriteString("echo ")
		for k := r.IntN(12); k >= 0; k-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		if i >= n {
			text = fixed[i-n]
		}
		if hasUnescapedPercent(text) {
			continue // cron's input: such lines are left alone
		}
		adopted := adoptCommand("g", "/bin/sh", text)
		rest, ok := strings.CutPrefix(adopted, "cron-gate g -- ")
		if !ok {
			t.Fatalf("adoptCommand(%q) = %q", text, adopted)
		}
		// What cron-gate receives: cron's processing of the adopted line,
		// then the outer shell's word splitting.
		outerCmd, _ := splitPercent(rest)
		argv, err := exec.Command("/bin/sh", "-c", `printf '%s\0' `+outerCmd).Output()
		if err != nil {
			t.Fatalf("outer shell on %q: %v", outerCmd, err)
		}
		words := strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00")
		if len(words) != 3 || words[0] != "/bin/sh" || words[1] != "-c" {
			t.Fatalf("adopted %q: cron-gate would get %q, want /bin/sh -c TEXT", adopted, words)
		}
		cmd, in := splitPercent(text)
		want := shellRun(t, dir, []string{"/bin/sh", "-c", cmd}, in)
		got := shellRun(t, dir, words, "")
		if got != want {
			t.Errorf("text %q\nadopted %q\noriginal printed %q\nadopted printed %q", text, adopted, want, got)
		}
	}
}

const adoptSample = `MAILTO=ops@example.com
SHELL=/bin/bash
# nightly
*/5 * * * * cd /srv/x && ./job.py >> log 2>&1
0 * * * *	/usr/local/bin/job.sh
15 2 * * * echo hi % there
30 * * * * cron-gate terms -- python3 terms.py
@reboot /usr/local/bin/start

@daily /srv/report.py
`

func TestAdoptPlanIdempotent(t *testing.T) {
	p, err := planAdopt([]byte(adoptSample), "tab", false, nil, noneTaken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.wrapped) != 3 || len(p.alone) != 2 {
		t.Fatalf("wrapped %d, alone %d; want 3 and 2", len(p.wrapped), len(p.alone))
	}
	want := "*/5 * * * * cron-gate job -- /bin/bash -c 'cd /srv/x && ./job.py >> log 2>&1'"
	if got := strings.Split(p.text(), "\n")[3]; got != want {
		t.Errorf("line 4 = %q, want %q", got, want)
	}
	if got := p.wrapped[1].gate; got != "job-2" {
		t.Errorf("second job's gate = %q, want job-2", got)
	}
	again, err := planAdopt([]byte(p.text()), "tab", false, nil, noneTaken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.wrapped) != 0 || unifiedDiff("tab", again) != "" || again.text() != p.text() {
		t.Errorf("a second run changes %d lines:\n%s", len(again.wrapped), unifiedDiff("tab", again))
	}
	if _, err := planAdopt([]byte(adoptSample), "tab", false, nil, noneTaken, map[int]string{7: "x"}); err == nil {
		t.Error("--name on an already gated line was accepted")
	}
	p, err = planAdopt([]byte(adoptSample), "tab", false, nil, noneTaken, map[int]string{5: "hourly"})
	if err != nil || p.wrapped[1].gate != "hourly" {
		t.Errorf("--name 5=hourly: %v, %+v", err, p.wrapped)
	}
}

func TestAdoptSystemAndTooLong(t *testing.T) {
	long := strings.Repeat("x", 970)
	tab := "0 1 * * * root /usr/bin/a\n0 2 * * * root echo " + long + "\n"
	p, err := planAdopt([]byte(tab), "/etc/cron.d/t", true, func(string) bool { return true }, noneTaken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.wrapped) != 1 || p.wrapped[0].new != "0 1 * * * root cron-gate a -- /bin/sh -c /usr/bin/a" {
		t.Errorf("wrapped %+v", p.wrapped)
	}
	if len(p.alone) != 1 || !strings.Contains(p.alone[0].reason, "too long") {
		t.Errorf("alone %+v, want the long line left alone as too long", p.alone)
	}
	if _, err := planAdopt([]byte("0 1 * * * a\n5/15 * * * * b\n"), "t", false, nil, noneTaken, nil); err == nil {
		t.Error("a crontab cron ignores was adopted")
	}
}

// TestAdoptDiffPatch: the diff is what diff -u and patch read: patch
// applies it to the original and gives the adopted text.
func TestAdoptDiffPatch(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("patch is not installed (apt-get install patch)")
	}
	var b strings.Builder
	for i := 0; i < 40; i++ {
		switch i % 9 {
		case 0, 4, 5:
			b.WriteString("* * * * * /bin/job" + string(rune('a'+i%26)) + "\n")
		default:
			b.WriteString("# comment\n")
		}
	}
	b.WriteString("# last, no newline")
	orig := b.String()
	p, err := planAdopt([]byte(orig), "tab", false, nil, noneTaken, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "tab")
	os.WriteFile(f, []byte(orig), 0o644)
	cmd := exec.Command("patch", "--quiet", "--posix", f)
	cmd.Stdin = strings.NewReader(unifiedDiff("tab", p))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch: %v: %s\n%s", err, out, unifiedDiff("tab", p))
	}
	got, _ := os.ReadFile(f)
	if string(got) != p.text() {
		t.Errorf("patched text differs from the adopted text:\n%s", got)
	}
}

func TestAdoptScheduleInterval(t *testing.T) {
	for expr, want := range map[string]time.Duration{
		"*/5 * * * *": 5 * time.Minute, "@hourly": time.Hour, "@daily": 24 * time.Hour,
		"0 1 * * 1,3": 5 * 24 * time.Hour, "*/7 * * * *": 7 * time.Minute, "* * * * *": time.Minute,
		"0 9-17 * * 1-5": 64 * time.Hour, "@reboot": 0,
	} {
		if got := scheduleInterval(expr); got != want {
			t.Errorf("scheduleInterval(%q) = %v, want %v", expr, got, want)
		}
	}
}

// FuzzAdopt: any crontab text adopts without a panic, and what it
// proposes reads (watch.ReadCrontabEntries) into as many entries, with a
// gate more for each wrapped line.
func FuzzAdopt(f *testing.F) {
	f.Add([]byte(adoptSample), false)
	f.Add([]byte("0 1 * * * root /usr/bin/a 'q' \\% \"x\"\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, system bool) {
		yes := func(string) bool { return true }
		p, err := planAdopt(data, "f", system, yes, noneTaken, nil)
		if err != nil {
			return
		}
		before, _ := watch.ReadCrontabEntries(data, "f", system, yes)
		after, fe := watch.ReadCrontabEntries([]byte(p.text()), "f", system, yes)
		if fe != "" || len(after) != len(before) {
			t.Fatalf("adopted text: %d entries (was %d), %q", len(after), len(before), fe)
		}
		gated := func(es []watch.CrontabJob) (n int) {
			for _, e := range es {
				if e.Gate != "" {
					n++
				}
			}
			return n
		}
		if gated(after) != gated(before)+len(p.wrapped) {
			t.Fatalf("gated lines %d, want %d + %d", gated(after), gated(before), len(p.wrapped))
		}
		if len(p.wrapped) > 0 && !bytes.HasPrefix([]byte(unifiedDiff("f", p)), []byte("--- f\n+++ f\n@@ -")) {
			t.Fatal("diff without headers")
		}
	})
}

// TestAdoptInstallRefusesChanged: a file that changed after adopt read
// it is not written, and no backup is left.
func TestAdoptInstallRefusesChanged(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "tab")
	os.WriteFile(f, []byte("* * * * * a\n"), 0o600)
	os.WriteFile(f, []byte("* * * * * b\n"), 0o600) // someone else's edit
	src := &adoptSource{label: f, file: f}
	_, err := src.install([]byte("* * * * * a\n"), []byte("x\n"), dir)
	if !errors.Is(err, errChanged) {
		t.Fatalf("install over a changed file: %v, want errChanged", err)
	}
	if got, _ := os.ReadFile(f); string(got) != "* * * * * b\n" {
		t.Errorf("the file is now %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	b1, err1 := writeBackup(filepath.Join(dir, "bk-"), []byte("1"), 0o600)
	b2, err2 := writeBackup(filepath.Join(dir, "bk-"), []byte("2"), 0o600)
	if err1 != nil || err2 != nil || b1 == b2 {
		t.Errorf("two backups in one second: %q %v, %q %v", b1, err1, b2, err2)
	}
}
