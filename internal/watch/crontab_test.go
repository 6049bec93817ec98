package watch

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/debiancron"
	"github.com/crongate/crongate/tests/testbin"
)

func TestReadCrontabGates(t *testing.T) {
	tab := `# m h dom mon dow command
SHELL=/bin/sh
CRON_GATE_CONFIG=/etc/cron-gate/config.toml
*/30 * * * *  cron-gate term-extract -- withlock --paths-from /q -- python3 w.py
30,45 * * * * /usr/local/bin/cron-gate --config /etc/x.toml -q dependency-classifier -- python3 c.py
0 */4 * * *   cron-gate --timeout 2h --kill-after=5s translate -- python3 t.py
# 0 * * * *   cron-gate disabled -- true
@reboot       sh -c 'sleep 60; cron-gate "quoted" -- true'
5 * * * *     cron-gate pause term-extract --for 1h
5 * * * *     cron-gate status
*/5 * * * *   cron-gate check
0 1 * * *     echo root cron-gate system-job -- true
0 2 * * *     echo cron-gate-not -- x; cron-gatex y -- z
0 3 * * *     cron-gate translate -- again
`
	jobs, fileErr := ReadCrontab([]byte(tab), UserCrontab, false, nil)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Gate)
		if j.Rejected != "" || j.Source != UserCrontab {
			t.Errorf("job %+v", j)
		}
	}
	want := []string{"term-extract", "dependency-classifier", "translate", "quoted", "system-job", "translate"}
	if fileErr != "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q (%q)\nwant %q", got, fileErr, want)
	}
}

func TestReadCrontabJobs(t *testing.T) {
	tab := `SHELL=/bin/sh
PATH=/usr/local/bin:/usr/bin:/bin
# m h dom mon dow user command
# */5 * * * * root cron-gate commented -- true
30,45 * * * *  pi cron-gate dependency-classifier -- withlock --slots 6 -- python3 x.py
0 */4 * * *	root	/usr/local/bin/cron-gate --config /etc/cg.toml translate -- python3 t.py
@daily pi cron-gate -q nightly -- backup
15-59/30 * * * * root sh -c 'cron-gate blog-worker-health -- python3 h.py'
0 3 * * * root echo no gate here
1 2 3 * * root cron-gate translate -- again
`
	users := func(u string) bool { return u == "root" || u == "pi" }
	want := []CrontabJob{
		{Gate: "dependency-classifier", Schedule: "30,45 * * * *", Source: "/etc/cron.d/blog", Line: 5},
		{Gate: "translate", Schedule: "0 */4 * * *", Source: "/etc/cron.d/blog", Line: 6},
		{Gate: "nightly", Schedule: "@daily", Source: "/etc/cron.d/blog", Line: 7},
		{Gate: "blog-worker-health", Schedule: "15-59/30 * * * *", Source: "/etc/cron.d/blog", Line: 8},
		{Gate: "translate", Schedule: "1 2 3 * *", Source: "/etc/cron.d/blog", Line: 10},
	}
	got, fileErr := ReadCrontab([]byte(tab), "/etc/cron.d/blog", true, users)
	for i := range got { // TestCrontabJobsCommand and TestCrontabJobsRunAs check these
		got[i].Command, got[i].Flags = "", nil
		got[i].Text, got[i].User, got[i].Config, got[i].Env = "", "", "", nil
	}
	if fileErr != "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadCrontab:\n got %+v (%q)\nwant %+v", got, fileErr, want)
	}
	if w := got[0].Where(); w != "/etc/cron.d/blog:5" {
		t.Errorf("Where = %q", w)
	}
}

// TestReadCrontabRejects: a line cron cannot read makes it ignore the
// whole file; the line says its own error, the others the file's.
func TestReadCrontabRejects(t *testing.T) {
	users := func(u string) bool { return u == "root" }
	for _, c := range []struct {
		name, tab string
		system    bool
		fileErr   string   // a part of it
		rejected  []string // a part of each job's Rejected, in order ("" runs)
	}{
		{"bad minute", "* * * * * root cron-gate a -- true\n5/15 * * * * root cron-gate b -- true\n0 * * * * root cron-gate c -- true\n", true,
			"line 2: bad minute", []string{"cron ignores the whole file: line 2: bad minute", "bad minute: minute field \"5/15\"", "cron ignores the whole file"}},
		{"nickname case", "@Daily root cron-gate a -- true\n", true, "bad time specifier", []string{"bad time specifier"}},
		{"hour step", "0 1/2 * * * root cron-gate a -- true\n", true, "bad hour", []string{"bad hour"}},
		{"unknown user", "* * * * * nobody-here cron-gate a -- true\n", true, "bad username", []string{"bad username: no user \"nobody-here\""}},
		{"other line's user", "* * * * * nobody-here true\n* * * * * root cron-gate a -- true\n", true, "line 1: bad username", []string{"cron ignores the whole file"}},
		{"no newline", "* * * * * cron-gate a -- true", false, "no newline", []string{"cron ignores the whole file: line 1 has no newline"}},
		{"no newline after a comment", "* * * * * cron-gate a -- true\n# the end", false, "", []string{""}},
		{"empty MAILTO", "MAILTO=\n* * * * * cron-gate a -- true\n", false, "line 1: bad minute", []string{"cron ignores the whole file"}},
		{"quoted MAILTO", "MAILTO=\"\"\n* * * * * cron-gate a -- true\n", false, "", []string{""}},
		{"sixth field", "* * * * * * cron-gate a -- true\n", false, "bad command", []string{"bad command"}},
		{"accepted oddities", "*/61 * * * * cron-gate a -- true\n0 0 * * 1#2 cron-gate b -- true\n0 0 * * fri-sun cron-gate c -- true\n", false, "", []string{"", "", ""}},
		{"long command", "* * * * * cron-gate a -- " + strings.Repeat("x", 990) + "\n", false, "command too long", []string{"command too long"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobs, fileErr := ReadCrontab([]byte(c.tab), "f", c.system, users)
			if c.fileErr == "" && fileErr != "" || !strings.Contains(fileErr, c.fileErr) {
				t.Errorf("file error %q, want %q", fileErr, c.fileErr)
			}
			if len(jobs) != len(c.rejected) {
				t.Fatalf("jobs %+v, want %d", jobs, len(c.rejected))
			}
			for i, j := range jobs {
				if c.rejected[i] == "" && j.Rejected != "" || !strings.Contains(j.Rejected, c.rejected[i]) {
					t.Errorf("job %d rejected %q, want %q", i, j.Rejected, c.rejected[i])
				}
			}
		})
	}
}

// TestReadCrontabDebianAgrees holds ReadCrontab to Debian's cron itself
// (crontab -n, package debiancron) on whole crontabs in a user's format:
// cron reads the file, or both ignore it for the same first bad line.
func TestReadCrontabDebianAgrees(t *testing.T) {
	testbin.Full(t, "Debian's cron (crontab -n), in a mount namespace")
	if !debiancron.Available() {
		if os.Getenv("CI") != "" {
			t.Fatal("Debian's crontab (package cron, with -n) is not installed; CI needs it for this test")
		}
		t.Skip("Debian's crontab (package cron, with -n) is not installed")
	}
	texts := []string{
		"* * * * * true\n",
		"* * * * * true",
		"* * * * * true\n# a comment, no newline",
		"* * * * * true\n   \t",
		"MAILTO=\n* * * * * true\n",
		"MAILTO=\"\"\n* * * * * true\n",
		"A = b\n* * * * * true\n",
		"A=\"b\" c\n* * * * * true\n",
		"A=b c\n* * * * * true\n",
		"\"A\"=b\n",
		"A\n",
		"=b\n",
		"A =\n",
		"  # indented comment\n\t\n* * * * * true\n",
		"* * * * * *true\n",
		"* * * * * true\n5/15 * * * * true\n",
		"@Daily true\n",
		"@daily true\n",
		"@reboot\n",
		"* * * * *\n",
		"* * * *\n",
		"*/61 * * * * true\n0 0 * * fri-sun x\n0 0 * * 1#2 y\n",
		"* * * * * " + strings.Repeat("x", 997) + "\n",
		"* * * * * " + strings.Repeat("x", 998) + "\n",
		"* * * * * " + strings.Repeat("x", 999) + "\n",
		"A=" + strings.Repeat("v", 995) + "\n",
		"A=" + strings.Repeat("v", 996) + "\n",
		"A=" + strings.Repeat("v", 1100) + "\n",
		"'A'='b'\n* * * * * true\n",
		"A='b\n",
		"* * * * *\ttrue\n",
		"1 2 3 4 5 cron-gate x -- true\n",
	}
	res, err := debiancron.Check(t.TempDir(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		_, fileErr := ReadCrontab([]byte(text), UserCrontab, false, nil)
		ours := fileWord(fileErr)
		theirs := res[i].Word
		if ours != theirs {
			t.Errorf("%q: ReadCrontab says %q (%s), Debian's crontab %q", text, orRead(ours), fileErr, orRead(theirs))
		}
	}
}

// fileWord is the word of ReadCrontab's file error that crontab -n
// prints ("bad minute"), or debiancron's word for a missing newline.
func fileWord(fileErr string) string {
	switch {
	case fileErr == "":
		return ""
	case strings.Contains(fileErr, "has no newline"):
		return debiancron.MissingNewline
	}
	_, after, _ := strings.Cut(fileErr, ": ")
	word, _, _ := strings.Cut(after, ":")
	return word
}

func orRead(w string) string {
	if w == "" {
		return "reads it"
	}
	return w
}

// FuzzReadCrontab: any text is read without a panic; every job is on a
// line of the text that names its gate, and when cron ignores the file
// no job counts.
func FuzzReadCrontab(f *testing.F) {
	for _, s := range []string{
		"* * * * * cron-gate a -- true\n",
		"MAILTO=\n@Daily root cron-gate b -- x\n",
		"0 0 * * 1#2 root sh -c 'cron-gate \"c\" -- true'",
		"A='b\n*/61 * * * * * cron-gate d\n",
		"# c\n\t \n5/15 * * * * cron-gate e -- x\n",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, system bool) {
		jobs, fileErr := ReadCrontab([]byte(text), "f", system, func(u string) bool { return u == "root" })
		lines := strings.Split(text, "\n")
		for _, j := range jobs {
			if j.Line < 1 || j.Line > len(lines) || !strings.Contains(lines[j.Line-1], j.Gate) {
				t.Fatalf("job %+v is not on a line of the text", j)
			}
			if fileErr != "" && j.Rejected == "" {
				t.Fatalf("cron ignores the file (%s) but %+v counts", fileErr, j)
			}
		}
	})
}
