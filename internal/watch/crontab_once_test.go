package watch

import (
	"reflect"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
)

// userJobs reads a user's crontab and keeps what these tests look at.
func userJobs(tab string) []CrontabJob {
	jobs, _ := ReadCrontab([]byte(tab), UserCrontab, false, nil)
	for i := range jobs { // TestCrontabJobsRunAs checks the others
		jobs[i].Source, jobs[i].Rejected = "", ""
		jobs[i].Text, jobs[i].User, jobs[i].Config, jobs[i].Env = "", "", "", nil
	}
	return jobs
}

// A CRON_TZ line is remembered for the jobs below it (quotes stripped,
// spaces around = allowed), and is not a job.
func TestCrontabJobsCronTZ(t *testing.T) {
	tab := `0 9 * * * cron-gate a -- true
CRON_TZ=Asia/Tokyo
0 9 * * * cron-gate b -- true
CRON_TZ = "America/New_York"
0 9 * * * cron-gate c -- true
`
	want := []CrontabJob{
		{Gate: "a", Schedule: "0 9 * * *", Line: 1, Command: "true"},
		{Gate: "b", Schedule: "0 9 * * *", Line: 3, CronTZ: "Asia/Tokyo", Command: "true"},
		{Gate: "c", Schedule: "0 9 * * *", Line: 5, CronTZ: "America/New_York", Command: "true"},
	}
	if got := userJobs(tab); !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadCrontab:\n got %+v\nwant %+v", got, want)
	}
}

// A line whose command is `cron-gate [FLAGS] NAME -- COMMAND` gives its
// flags and COMMAND's text as written (what cron-gate trigger runs), in a
// system crontab after the user field too; the values of --once-per and
// --jitter are not taken for the gate's name.
func TestCrontabJobsCommand(t *testing.T) {
	tab := "*/10 * * * * cron-gate --once-per 1d --jitter=5m nightly -- python3 n.py  >/dev/null 2>&1\n" +
		"0 4 * * * sh -c 'cron-gate wrapped -- true'\n" +
		"0 5 * * * cron-gate --timeout 1h long --\n"
	want := []CrontabJob{
		{Gate: "nightly", Schedule: "*/10 * * * *", Line: 1, Flags: []string{"--once-per", "1d", "--jitter=5m"}, Command: "python3 n.py  >/dev/null 2>&1"},
		{Gate: "wrapped", Schedule: "0 4 * * *", Line: 2},
		{Gate: "long", Schedule: "0 5 * * *", Line: 3},
	}
	if got := userJobs(tab); !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadCrontab:\n got %+v\nwant %+v", got, want)
	}
	sys, _ := ReadCrontab([]byte("0 3 * * * root /usr/local/bin/cron-gate -q backup -- sh -c 'tar c /srv | gzip > /b.tgz'\n"), "/etc/cron.d/b", true, func(string) bool { return true })
	if len(sys) != 1 || sys[0].Command != "sh -c 'tar c /srv | gzip > /b.tgz'" || !reflect.DeepEqual(sys[0].Flags, []string{"-q"}) {
		t.Fatalf("system crontab: %+v", sys)
	}
}

// FuzzCrontabCommand: a crontab is outside input; reading it never
// panics, every job's gate is a gate name, and a job's command is a part
// of its line.
func FuzzCrontabCommand(f *testing.F) {
	f.Add("*/10 * * * * cron-gate --once-per 1d nightly -- python3 n.py\nCRON_TZ=UTC\n")
	f.Add("@daily cron-gate a --\n0 1 * * * cron-gate -q --config x b -- y\n")
	f.Add("'A B' = \"x y\"  \nX=1\n0 1 * * * cron-gate --config=c.toml b -- y % in\n")
	f.Fuzz(func(t *testing.T, tab string) {
		jobs, _ := ReadCrontab([]byte(tab), UserCrontab, false, nil)
		for _, j := range jobs {
			if gate.CheckName(j.Gate) != nil {
				t.Fatalf("gate %q", j.Gate)
			}
			if j.Command != "" && !strings.Contains(tab, j.Command) {
				t.Fatalf("command %q is not in the crontab", j.Command)
			}
			if !strings.Contains(tab, j.Text) || !strings.Contains(j.Text, j.Config) {
				t.Fatalf("command %q (config %q) is not in the crontab", j.Text, j.Config)
			}
		}
	})
}

// TestCrontabJobsRunAs: what cron-gate trigger needs to run a line as cron
// does: the whole command as cron gives it to the shell (after the user
// field and the one blank after it), the user field, the --config of the
// line's cron-gate (either form), and the crontab's settings above the
// line, in order, as load_env reads them (quotes, blanks around =;
// trailing blanks go, even inside quotes: strdtb runs after the parser).
func TestCrontabJobsRunAs(t *testing.T) {
	tab := "SHELL=/bin/bash\n" +
		"PATH = /opt/bin:/usr/bin:/bin   \n" +
		"0 1 * * * nobody  cron-gate --config /etc/x.toml a -- true; echo after % in\n" +
		"'MY VAR' = \" two words \"\n" +
		"CRON_GATE_CONFIG='/etc/y.toml'\n" +
		"0 2 * * * root sh -c 'cron-gate --config=rel.toml b -- true'\n"
	jobs, fileErr := ReadCrontab([]byte(tab), "/etc/cron.d/t", true, func(string) bool { return true })
	if fileErr != "" || len(jobs) != 2 {
		t.Fatalf("ReadCrontab: %+v %q", jobs, fileErr)
	}
	a, b := jobs[0], jobs[1]
	if a.User != "nobody" || a.Text != " cron-gate --config /etc/x.toml a -- true; echo after % in" || a.Config != "/etc/x.toml" ||
		!reflect.DeepEqual(a.Env, []string{"SHELL=/bin/bash", "PATH=/opt/bin:/usr/bin:/bin"}) {
		t.Errorf("line 3: %+v", a)
	}
	if b.User != "root" || b.Text != "sh -c 'cron-gate --config=rel.toml b -- true'" || b.Config != "rel.toml" ||
		!reflect.DeepEqual(b.Env, []string{"SHELL=/bin/bash", "PATH=/opt/bin:/usr/bin:/bin", "MY VAR= two words", "CRON_GATE_CONFIG=/etc/y.toml"}) {
		t.Errorf("line 6: %+v", b)
	}
}
