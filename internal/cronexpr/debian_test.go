package cronexpr

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/debiancron"
	"github.com/crongate/crongate/tests/testbin"
)

// debianCorpus are schedules whose reading differs between cron
// implementations, and the edges of entry.c's rules.
var debianCorpus = []string{
	"* * * * *", "5/15 * * * *", "0 1/2 * * *", "@Daily", "@HOURLY", "@daily", "@reboot", "@annually",
	"*/61 * * * *", "*/32 * * * *", "0 0 * * fri-sun", "0 0 * * 1#2", "*x * * * *", "* * * *",
	"60 * * * *", "4294967296 * * * *", "4294967355 * * * *", "99999999999999999999 * * * *",
	"*/0 * * * *", "*/-1 * * * *", "*/4294967297 * * * *", "5-1 * * * *", "1,,2 * * * *", "1, * * * *",
	",1 * * * *", "1-5/2,7 * * * 7", "0 0 * JAN-mar MON", "0 0 * * 7-1", "0 0 * * sun-sat",
	"0 0 * * 0-7/2", "5x * * * *", "5.5 * * * *", "5-7x * * * *", "5-7/2x * * * *", "5-7/2# * * * *",
	"* * * * 8", "* * 0 * *", "* * 32 * *", "* * * 0 *", "* * * 13 *", "* 24 * * *", "-1 * * * *",
	"+1 * * * *", "01 * * * *", "*/1 * * * *", "1-60 * * * *", "* * * * mon-fri/2", "* * * jan/2 *",
	"@", "@ daily", "@daily7", "0 0 * * L", "0 0 ? * *", "0 0 L * *", "*-5 * * * *", "*,5 * * * *",
}

// TestDebianCrontabAgrees holds Parse to Debian's cron itself: `crontab
// -n FILE` (Debian's crontab only: "dry run: checks the syntax, then bails
// out") reads a crontab with the same entry.c as the daemon. Every
// schedule of the corpus and of a seeded random batch is checked both
// ways: accepted by both, or rejected by both with the same word ("bad
// minute"). As root the checks run in a mount namespace of their own
// with a private spool dir, where crontab writes its temporary copy;
// otherwise crontab writes it in the spool dir and removes it, as it
// does for any user. Without Debian's crontab the test skips, except
// under CI, where .ci/run installs Debian's cron.
func TestDebianCrontabAgrees(t *testing.T) {
	testbin.Full(t, "Debian's cron (crontab -n) on 656 schedules, in a mount namespace")
	if !debiancron.Available() {
		if os.Getenv("CI") != "" {
			t.Fatal("Debian's crontab (package cron) is not installed; CI needs it for this test")
		}
		t.Skip("Debian's crontab (package cron, with -n) is not installed")
	}
	cases := append([]string(nil), debianCorpus...)
	r := rand.New(rand.NewPCG(14, 2026))
	for i := 0; i < 600; i++ {
		cases = append(cases, randomSchedule(r))
	}
	got := crontabCheck(t, cases)
	agree := 0
	for i, expr := range cases {
		// The line of the file crontab read: the schedule and a command.
		_, _, err := ParseEntry(expr + " true")
		ours := ""
		if err != nil {
			ours = err.(*Error).Word
		}
		if theirs := got[i]; ours != theirs {
			t.Errorf("%q: cronexpr says %q, Debian's crontab %q", expr, orAccepted(ours), orAccepted(theirs))
			continue
		}
		// Parse, for a schedule alone, agrees where it has five fields.
		if len(blankFields(expr)) == nFields || strings.HasPrefix(expr, "@") {
			if _, perr := Parse(expr); (perr == nil) != (err == nil) {
				t.Errorf("%q: Parse says %v, ParseEntry %v", expr, perr, err)
			}
		}
		agree++
	}
	t.Logf("%d schedules: cronexpr and Debian's crontab -n agree on %d", len(cases), agree)
}

func orAccepted(s string) string {
	if s == "" {
		return "accepted"
	}
	return s
}

// randomSchedule builds a schedule from the pieces cron's readers
// disagree on.
func randomSchedule(r *rand.Rand) string {
	if r.IntN(12) == 0 {
		words := []string{"daily", "Daily", "HOURLY", "hourly", "weekly", "reboot", "midnight", "yearly", "annually", "monthly", "often"}
		return "@" + words[r.IntN(len(words))]
	}
	num := func() string {
		switch r.IntN(10) {
		case 0:
			names := []string{"jan", "Mon", "sun", "FRI", "dec", "xyz", "sat", "7", "L"}
			return names[r.IntN(len(names))]
		case 1:
			big := []string{"99", "4294967296", "0", "00", "007", "65"}
			return big[r.IntN(len(big))]
		}
		return fmt.Sprint(r.IntN(64))
	}
	elem := func() string {
		var s string
		switch r.IntN(4) {
		case 0:
			s = "*"
		case 1:
			s = num()
		default:
			s = num() + "-" + num()
		}
		if r.IntN(3) == 0 {
			s += "/" + num()
		}
		if r.IntN(10) == 0 {
			junk := []string{"#2", "x", "?", ".", "-", "/", "L"}
			s += junk[r.IntN(len(junk))]
		}
		return s
	}
	fields := make([]string, 5)
	for i := range fields {
		f := elem()
		for r.IntN(4) == 0 {
			f += "," + elem()
		}
		fields[i] = f
	}
	return strings.Join(fields, " ")
}

// crontabCheck asks Debian's crontab about one crontab per schedule
// (the schedule and a command) and returns, per schedule, "" when it
// was accepted or the word it printed ("bad minute").
func crontabCheck(t *testing.T, cases []string) []string {
	t.Helper()
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = c + " true\n"
	}
	res, err := debiancron.Check(t.TempDir(), texts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Word
	}
	return out
}
