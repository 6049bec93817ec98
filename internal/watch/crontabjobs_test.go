package watch

import (
	"reflect"
	"testing"
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
		{Gate: "a", Schedule: "0 9 * * *", Line: 1},
		{Gate: "b", Schedule: "0 9 * * *", Line: 3, CronTZ: "Asia/Tokyo"},
		{Gate: "c", Schedule: "0 9 * * *", Line: 5, CronTZ: "America/New_York"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CrontabJobs:\n got %+v\nwant %+v", got, want)
	}
}
