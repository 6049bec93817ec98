package watch

import (
	"reflect"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
)

func TestCrontabJobs(t *testing.T) {
	tab := `SHELL=/bin/sh
PATH=/usr/local/bin:/usr/bin:/bin
# m h dom mon dow command
# */5 * * * * cron-gate commented -- true
30,45 * * * *  cron-gate dependency-classifier -- withlock --slots 6 -- python3 x.py
0 */4 * * *    /usr/local/bin/cron-gate --config /etc/cg.toml translate -- python3 t.py
@daily cron-gate -q nightly -- backup
15/30 * * * * root sh -c 'cron-gate blog-worker-health -- python3 h.py'
0 3 * * * echo no gate here
1 2 3 * * cron-gate translate -- again
`
	want := []CrontabJob{
		{Gate: "dependency-classifier", Schedule: "30,45 * * * *", Line: 5},
		{Gate: "translate", Schedule: "0 */4 * * *", Line: 6},
		{Gate: "nightly", Schedule: "@daily", Line: 7},
		{Gate: "blog-worker-health", Schedule: "15/30 * * * *", Line: 8},
		{Gate: "translate", Schedule: "1 2 3 * *", Line: 10},
	}
	got := CrontabJobs([]byte(tab))
	for i := range got { // TestCrontabJobsCommand checks these
		got[i].Command, got[i].Flags = "", nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CrontabJobs:\n got %+v\nwant %+v", got, want)
	}
	// The gates agree with CrontabGates, which it must not change.
	gates := CrontabGates([]byte(tab))
	if !reflect.DeepEqual(gates, []string{"dependency-classifier", "translate", "nightly", "blog-worker-health"}) {
		t.Fatalf("CrontabGates = %v", gates)
	}
}

// A CRON_TZ line is remembered for the jobs below it (quotes stripped,
// spaces around = allowed), and is not a job.
func TestCrontabJobsCronTZ(t *testing.T) {
	tab := `0 9 * * * cron-gate a -- true
CRON_TZ=Asia/Tokyo
0 9 * * * cron-gate b -- true
CRON_TZ = "America/New_York"
0 9 * * * cron-gate c -- true
CRON_TZX=nope
`
	got := CrontabJobs([]byte(tab))
	want := []CrontabJob{
		{Gate: "a", Schedule: "0 9 * * *", Line: 1, Command: "true"},
		{Gate: "b", Schedule: "0 9 * * *", Line: 3, CronTZ: "Asia/Tokyo", Command: "true"},
		{Gate: "c", Schedule: "0 9 * * *", Line: 5, CronTZ: "America/New_York", Command: "true"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CrontabJobs:\n got %+v\nwant %+v", got, want)
	}
}

// A line whose command is `cron-gate [FLAGS] NAME -- COMMAND` gives its
// flags and COMMAND's text as written (what cron-gate trigger runs); the
// values of --once-per and --jitter are not taken for the gate's name.
func TestCrontabJobsCommand(t *testing.T) {
	tab := "*/10 * * * * cron-gate --once-per 1d --jitter=5m nightly -- python3 n.py  >/dev/null 2>&1\n" +
		"0 3 * * * root cron-gate -q backup -- sh -c 'tar c /srv | gzip > /b.tgz'\n" +
		"0 4 * * * sh -c 'cron-gate wrapped -- true'\n" +
		"0 5 * * * cron-gate --timeout 1h long --\n"
	got := CrontabJobs([]byte(tab))
	want := []CrontabJob{
		{Gate: "nightly", Schedule: "*/10 * * * *", Line: 1, Flags: []string{"--once-per", "1d", "--jitter=5m"}, Command: "python3 n.py  >/dev/null 2>&1"},
		{Gate: "backup", Schedule: "0 3 * * *", Line: 2, Flags: []string{"-q"}, Command: "sh -c 'tar c /srv | gzip > /b.tgz'"},
		{Gate: "wrapped", Schedule: "0 4 * * *", Line: 3},
		{Gate: "long", Schedule: "0 5 * * *", Line: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CrontabJobs:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzCrontabJobs: a crontab is outside input; reading it never panics,
// every job's gate is a gate name, and a job's command is a part of its
// line, after the gate's name.
func FuzzCrontabJobs(f *testing.F) {
	f.Add("*/10 * * * * cron-gate --once-per 1d nightly -- python3 n.py\nCRON_TZ=UTC\n")
	f.Add("0 3 * * * root cron-gate -q backup -- sh -c 'x'\n@daily cron-gate a --\n")
	f.Fuzz(func(t *testing.T, tab string) {
		for _, j := range CrontabJobs([]byte(tab)) {
			if gate.CheckName(j.Gate) != nil {
				t.Fatalf("gate %q", j.Gate)
			}
			if j.Command != "" && !strings.Contains(tab, j.Command) {
				t.Fatalf("command %q is not in the crontab", j.Command)
			}
		}
	})
}
