package cronexpr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
	if !debianCrontab() {
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

// debianCrontab reports whether crontab is Debian's, with -n.
func debianCrontab() bool {
	out, _ := runCmd("crontab", "-h")
	return strings.Contains(out, "dry run")
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

// crontabCheck runs `crontab -n` on one file per schedule (the schedule
// and a command) and returns, per schedule, "" when it was accepted or
// the word crontab printed ("bad minute").
func crontabCheck(t *testing.T, cases []string) []string {
	t.Helper()
	dir := t.TempDir()
	for i, c := range cases {
		if err := os.WriteFile(fmt.Sprintf("%s/%d", dir, i), []byte(c+" true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One shell for every file: "INDEX<TAB>OUTPUT" lines, crontab's
	// output on one line.
	loop := fmt.Sprintf(`for i in $(seq 0 %d); do printf '%%s\t%%s\n' "$i" "$(crontab -n %s/$i 2>&1 | tr '\n' ' ')"; done`, len(cases)-1, dir)
	argv := []string{"sh", "-c", loop}
	if os.Geteuid() == 0 {
		// crontab writes its temporary copy in the spool dir: a
		// private one, in a mount namespace of its own.
		argv = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
			"mount -t tmpfs -o mode=1730 tmpfs /var/spool/cron/crontabs && " + loop}
	}
	out, err := runCmd(argv[0], argv[1:]...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv[:3], err, out)
	}
	res := make([]string, len(cases))
	seen := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		idx, text, _ := strings.Cut(l, "\t")
		var i int
		if _, err := fmt.Sscan(idx, &i); err != nil || i < 0 || i >= len(cases) {
			t.Fatalf("unexpected line from the crontab loop: %q", l)
		}
		seen++
		switch {
		case strings.Contains(text, "successfully checked"):
			res[i] = ""
		default:
			// "/dir/i":0: bad minute errors in crontab file, can't install.
			_, after, ok := strings.Cut(text, ": ")
			word, _, _ := strings.Cut(after, " errors in crontab")
			if !ok || word == "" {
				t.Fatalf("crontab -n on %q said %q", cases[i], text)
			}
			res[i] = strings.TrimSpace(word)
		}
	}
	if seen != len(cases) {
		t.Fatalf("crontab loop answered %d of %d", seen, len(cases))
	}
	return res
}

// runCmd runs a command with a generous bound, for a hang to fail the
// test rather than the suite.
func runCmd(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
