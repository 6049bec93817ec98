// Package realcron runs cron-gate and withlock under Debian's own cron
// daemon for real minutes and counts what cron hands to its mailer: the
// proof that a skip mails nothing and a failure still does
// (docs/cron-gate.md, "Skips under cron"), and that the watchdog counts
// the lines the daemon runs (docs/watchdog.md, "The crontabs cron
// reads").
//
// The daemon runs in a mount namespace of its own (unshare(1)), where
// /etc/crontab, /etc/cron.d, the spool dir, /run (its pid file) and
// /usr/sbin/sendmail are the test's: it reads nothing of the host's
// crontabs and mails nothing anywhere, and nothing of the host is changed
// (the mounts vanish with the namespace). Its mailer is a script that
// writes each mail into the test's directory. The test takes 3 to 4
// minutes (cron runs jobs at minute boundaries; it waits for four), is
// bounded at 8, and is its own package so that `go test ./...` runs it
// beside the others. It needs root (cron runs jobs as users, the
// namespace needs CAP_SYS_ADMIN), Debian's cron, unshare and nsenter; it
// skips without them, except under CI (.ci/run installs cron), and with
// -short.
package realcron

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// minutes is how many distinct minutes of cron ticks the test waits for:
// four ticks span three real minutes.
const minutes = 4

// deadline bounds the whole run.
const deadline = 8 * time.Minute

// need skips (or under CI fails) when the test cannot run here.
func need(t *testing.T) {
	t.Helper()
	why := ""
	switch {
	case !testbin.FullTier():
		testbin.Full(t, "the real cron test takes 3 to 4 minutes")
	case os.Geteuid() != 0:
		why = "it needs root: cron runs jobs as users, and the mount namespace needs CAP_SYS_ADMIN"
	default:
		for _, p := range []string{"/usr/sbin/cron", "unshare", "nsenter", "timeout", "flock"} {
			if _, err := exec.LookPath(p); err != nil {
				why = p + " is not installed (Debian's cron, util-linux, coreutils)"
			}
		}
	}
	if why == "" {
		out, err := exec.Command("unshare", "--mount", "--propagation", "private", "true").CombinedOutput()
		if err != nil {
			why = fmt.Sprintf("unshare --mount fails here: %v %s", err, out)
		}
	}
	if why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the real cron test cannot run: %s; CI requires it", why)
		}
		t.Skip(why)
	}
}

// world is the test's directory as the jobs see it.
type world struct {
	t    *testing.T
	dir  string // symlinks resolved
	bin  string // the binaries built from this tree
	host string
}

func (w *world) path(p string) string { return filepath.Join(w.dir, p) }

func (w *world) write(name, text string, mode os.FileMode) {
	w.t.Helper()
	text = strings.ReplaceAll(text, "@W@", w.dir)
	text = strings.ReplaceAll(text, "@BIN@", w.bin)
	f := w.path(name)
	os.MkdirAll(filepath.Dir(f), 0o755)
	if err := os.WriteFile(f, []byte(text), mode); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(f, mode); err != nil { // not masked by the umask
		w.t.Fatal(err)
	}
}

// env is the crontab environment every file repeats (Debian's cron gives
// a cron.d file none of /etc/crontab's).
const env = `SHELL=/bin/sh
PATH=@BIN@:/usr/bin:/bin
MAILTO=root
CRON_GATE_CONFIG=@W@/config.toml
CRON_GATE_STATE_DIR=@W@/state
CRON_GATE_CACHE_DIR=@W@/cache
WITHLOCK_LOCK_DIR=@W@/locks
`

// The system crontab: the watchdog, installed in the same minute as the
// jobs (each check waits, bounded, until the failing job's first run has
// ended, as when that run fails in the minute before the first check), a
// paused gate (and one with -v), a legacy lock held by another process,
// a withlock pair contended by a holder (behind a gate, and bare), a
// failing job and a control that succeeds.
const etcCrontab = env + `* * * * * root timeout 30 sh -c 'until grep -qs "\"event\":\"end\"" @W@/state/gates/failing/journal.jsonl; do sleep 0.1; done'; cron-gate check
* * * * * root cron-gate paused -- touch @W@/ran-paused
* * * * * root cron-gate -v pausedv -- touch @W@/ran-pausedv
* * * * * root cron-gate legacy -- touch @W@/ran-legacy
* * * * * root cron-gate pair -- withlock --paths @W@/post.md -- touch @W@/ran-pair
* * * * * root withlock --paths @W@/post.md -- touch @W@/ran-bare; echo $? >> @W@/bare.codes
* * * * * root cron-gate failing -- sh -c 'echo failing-output; exit 3'
* * * * * root cron-gate ok -- true
* * * * * root cron-gate plainsilent -- false
* * * * * root cron-gate --chronic chronicok -- sh -c 'echo chatty-success; echo more >&2'
* * * * * root cron-gate chronicfail -- sh -c 'echo chronic-output; echo chronic-stderr >&2; exit 4'
* * * * * root cron-gate chronicsilent -- false
* * * * * root cron-gate --chronic chronicbusy -- sh -c 'echo before-the-lock; withlock --paths @W@/post.md -- touch @W@/ran-chronicbusy'
* * * * * root cron-gate chronicpaused -- sh -c 'echo never; touch @W@/ran-chronicpaused'
`

// The files of /etc/cron.d: one cron reads, and three it ignores (a
// group-writable file, a file with a line it rejects, a name with a dot).
var cronD = []struct {
	name, text string
	mode       os.FileMode
}{
	{"good", env + "* * * * * root cron-gate good -- true\n", 0o644},
	{"loose", env + "* * * * * root cron-gate loose -- touch @W@/ran-loose\n", 0o664},
	{"badline", env + "* * * * * root cron-gate badline -- touch @W@/ran-badline\n5/15 * * * * root true\n", 0o644},
	{"dotted.name", env + "* * * * * root touch @W@/ran-dotted\n", 0o644},
}

const config = `state_dir = "@W@/state"

[gates.paused]
paused = true
reason = "maintenance"

[gates.pausedv]
paused = true

[gates.chronicfail]
chronic = true

[gates.chronicsilent]
chronic = true

[gates.chronicpaused]
chronic = true
paused = true

[gates.legacy]
legacy_locks = ["@W@/legacy.lock"]

[gates.good]
interval = "1m"

[gates.loose]
interval = "1m"

[gates.badline]
interval = "1m"

[[notify]]
type = "command"
argv = ["@W@/notify.sh"]
`

// notify.sh is the watchdog's notifier: one line per message.
const notify = `#!/bin/sh
echo "$CRON_GATE_ALERT_KIND $CRON_GATE_ALERT_CONDITION $CRON_GATE_ALERT_GATE" >> @W@/alerts
`

// sendmail is cron's mailer here: each mail (headers and body, as cron
// pipes it) into a file of its own.
const sendmail = `#!/bin/sh
f=$(mktemp @W@/mail/mail.XXXXXX)
{ echo "X-Sendmail-Args: $*"; cat; } > "$f"
`

// nsScript sets the namespace up and becomes cron: private crontabs,
// spool dir, /run, and the recording mailer at /usr/sbin/sendmail (bound
// over the host's MTA, or, without one, in a /usr/sbin of links to the
// host's). cron stops by itself after the deadline, whatever happens to
// the test. -L 15 logs every job and, with its 4, marks a failed job's
// mail "(failed)" (Debian's default, -L 1, does not).
const nsScript = `set -e
mount -t tmpfs -o mode=755 tmpfs /etc/cron.d
for f in @W@/crond/*; do cp -p "$f" /etc/cron.d/; done
mount -t tmpfs -o mode=1730 tmpfs /var/spool/cron/crontabs
mount --bind @W@/etc-crontab /etc/crontab
mount -t tmpfs -o mode=755 tmpfs /run
cron=/usr/sbin/cron
if [ -e /usr/sbin/sendmail ]; then
	mount --bind @W@/sendmail /usr/sbin/sendmail
else
	mkdir @W@/sbin
	mount --bind /usr/sbin @W@/sbin
	mount -t tmpfs -o mode=755 tmpfs /usr/sbin
	for f in @W@/sbin/*; do ln -s "$f" /usr/sbin/; done
	ln -s @W@/sendmail /usr/sbin/sendmail
	cron=@W@/sbin/cron
fi
touch @W@/ns-ready
exec timeout %d "$cron" -f -L 15
`

// mail is one mail cron handed to sendmail.
type mail struct {
	subject, body string
}

// TestRealCron: under Debian's cron for four minutes of ticks, a paused
// gate, a legacy lock held, a busy withlock behind a gate and bare mail
// nothing; -v makes cron mail the paused gate's skip; the failing job's
// output is mailed once per run, "(failed)". Every job ran at every tick
// (the journals say so). The files of /etc/cron.d that cron ignores run
// nothing, and cron-gate check, reading what the daemon reads, says why.
func TestRealCron(t *testing.T) {
	need(t)
	bin, err := testbin.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	host, _ := os.Hostname()
	w := &world{t: t, dir: dir, bin: bin, host: host}
	w.write("etc-crontab", etcCrontab, 0o644)
	for _, f := range cronD {
		w.write("crond/"+f.name, f.text, f.mode)
	}
	w.write("config.toml", config, 0o644)
	w.write("sendmail", sendmail, 0o755)
	w.write("notify.sh", notify, 0o755)
	for _, d := range []string{"mail", "locks", "state"} {
		os.Mkdir(w.path(d), 0o755)
	}
	os.Mkdir(w.path("cache"), 0o700)

	// The holders, for the whole run: another process holding the
	// legacy lock, and a withlock holding post.md.
	holders := []*exec.Cmd{
		exec.Command("flock", w.path("legacy.lock"), "sh", "-c", "touch "+w.path("legacy.held")+"; exec sleep 900"),
		exec.Command(filepath.Join(bin, "withlock"), "--lock-dir", w.path("locks"), "--paths", w.path("post.md"), "--",
			"sh", "-c", "touch "+w.path("post.held")+"; exec sleep 900"),
	}
	for _, h := range holders {
		h.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		defer func(h *exec.Cmd) {
			syscall.Kill(-h.Process.Pid, syscall.SIGKILL)
			h.Wait()
		}(h)
	}
	waitFile(t, w.path("legacy.held"), w.path("post.held"))

	// cron, in its namespace.
	script := strings.ReplaceAll(fmt.Sprintf(nsScript, int(deadline/time.Second)), "@W@", dir)
	cronOut := &lockedBuffer{}
	cron := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cron.Stdout, cron.Stderr = cronOut, cronOut
	cron.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cron.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cron.Wait(); close(exited) }()
	stopCron := func() {
		syscall.Kill(-cron.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cron.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	defer stopCron()
	waitFile(t, w.path("ns-ready"))
	t.Logf("cron started at %s; waiting for %d minutes of ticks", start.Format("15:04:05"), minutes)

	// Wait for the control job's runs in four distinct minutes, and
	// stop cron inside a minute, when that minute's jobs (which take
	// well under a second) are done and the next minute's are far.
	for {
		select {
		case <-exited:
			t.Fatalf("cron ended early: %s", cronOut.String())
		default:
		}
		if time.Since(start) > deadline {
			t.Fatalf("after %v, the control job ran in %d minutes, want %d; cron said: %s", deadline, len(tickMinutes(w, "ok")), minutes, cronOut.String())
		}
		if sec := time.Now().Second(); len(tickMinutes(w, "ok")) >= minutes && sec >= 15 && sec < 45 {
			break
		}
		time.Sleep(time.Second)
	}
	stopCron()
	ran := time.Since(start)

	// Every run that printed has been mailed once it ended: wait until
	// the failing job's mails match its runs (a run of the last tick may
	// still be ending).
	var mails []mail
	failing, chronicFail, chronicSilent := 0, 0, 0
	for end := time.Now().Add(30 * time.Second); ; {
		mails = readMails(t, w)
		failing = count(endOutcomes(w, "failing"), "failure")
		chronicFail = count(endOutcomes(w, "chronicfail"), "failure")
		chronicSilent = count(endOutcomes(w, "chronicsilent"), "failure")
		if countSubject(mails, "cron-gate failing") == failing &&
			countSubject(mails, "cron-gate chronicfail") == chronicFail &&
			countSubject(mails, "cron-gate chronicsilent") == chronicSilent || time.Now().After(end) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	// What cron ran: every job at every tick.
	ticks := len(tickMinutes(w, "ok"))
	skips := map[string]int{}
	for _, g := range []string{"paused", "pausedv", "legacy", "pair", "chronicbusy", "chronicpaused"} {
		skips[g] = countSkips(w, g)
		if skips[g] < ticks-1 {
			t.Errorf("gate %s skipped %d times in %d ticks: cron did not run it each minute", g, skips[g], ticks)
		}
	}
	bare := strings.Count(readFile(w.path("bare.codes")), "75\n")
	if bare < ticks-1 || strings.Trim(readFile(w.path("bare.codes")), "75\n") != "" {
		t.Errorf("bare withlock: exit codes %q, want 75 at each of %d ticks", readFile(w.path("bare.codes")), ticks)
	}
	plainSilent := count(endOutcomes(w, "plainsilent"), "failure")
	chronicOK := count(endOutcomes(w, "chronicok"), "success")
	for _, r := range []struct {
		gate string
		n    int
	}{{"failing", failing}, {"plainsilent", plainSilent}, {"chronicok", chronicOK}, {"chronicfail", chronicFail}, {"chronicsilent", chronicSilent}} {
		if r.n < ticks-1 {
			t.Errorf("the job of gate %s ran %d times in %d ticks, with the outcome it always has", r.gate, r.n, ticks)
		}
	}
	for _, f := range []string{"ran-paused", "ran-pausedv", "ran-legacy", "ran-pair", "ran-bare", "ran-chronicbusy", "ran-chronicpaused"} {
		if _, err := os.Stat(w.path(f)); err == nil {
			t.Errorf("%s exists: a skipped command ran", f)
		}
	}

	// What cron mailed.
	skipMails := 0
	for _, m := range mails {
		switch {
		case strings.Contains(m.subject, "cron-gate failing"):
			if !strings.Contains(m.subject, "(failed)") || !strings.Contains(m.body, "failing-output") {
				t.Errorf("the failing job's mail: subject %q, body %q", m.subject, m.body)
			}
		case strings.Contains(m.subject, "cron-gate chronicfail"):
			// The output, in the order written, then the line.
			if !strings.Contains(m.body, "chronic-output\nchronic-stderr\ncron-gate: gate chronicfail: the command failed with exit 4 after ") {
				t.Errorf("the chronic failing job's mail: subject %q, body %q", m.subject, m.body)
			}
		case strings.Contains(m.subject, "cron-gate chronicsilent"):
			if !strings.Contains(m.body, "cron-gate: gate chronicsilent: the command failed with exit 1 after ") {
				t.Errorf("the chronic silent failing job's mail: subject %q, body %q", m.subject, m.body)
			}
		case strings.Contains(m.subject, "cron-gate -v pausedv"):
			if !strings.Contains(m.body, "cron-gate: skipped gate pausedv: paused by config") {
				t.Errorf("the -v job's mail: %q", m.body)
			}
		default:
			skipMails++
			t.Errorf("a mail cron should not have sent: subject %q, body %q", m.subject, m.body)
		}
	}
	vMails := countSubject(mails, "cron-gate -v pausedv")
	failMails := countSubject(mails, "cron-gate failing")
	if failMails != failing {
		t.Errorf("the failing job ran %d times and was mailed %d times", failing, failMails)
	}
	chronicFailMails, chronicSilentMails := countSubject(mails, "cron-gate chronicfail"), countSubject(mails, "cron-gate chronicsilent")
	if chronicFailMails != chronicFail || chronicSilentMails != chronicSilent {
		t.Errorf("chronic: the failing job with output ran %d times and was mailed %d times; the one without, %d and %d",
			chronicFail, chronicFailMails, chronicSilent, chronicSilentMails)
	}
	if vMails != skips["pausedv"] {
		t.Errorf("the -v job skipped %d times and was mailed %d times", skips["pausedv"], vMails)
	}
	t.Logf("Debian's cron ran %d minutes of ticks in %v: %d mails in all; "+
		"from skips without -v: %d (paused %d, legacy lock %d, busy pair behind cron-gate %d, bare withlock busy %d); "+
		"from the -v paused gate: %d of %d skips; from the failing job: %d of %d runs",
		ticks, ran.Round(time.Second), len(mails), skipMails, skips["paused"], skips["legacy"], skips["pair"], bare,
		vMails, skips["pausedv"], failMails, failing)
	t.Logf("mails under chronic: success with output %d of %d runs; failure with output %d of %d runs; failure without output %d of %d runs "+
		"(without chronic: %d of %d); busy skips %d of %d, paused skips %d of %d",
		countSubject(mails, "cron-gate --chronic chronicok"), chronicOK, chronicFailMails, chronicFail, chronicSilentMails, chronicSilent,
		countSubject(mails, "cron-gate plainsilent"), plainSilent,
		countSubject(mails, "cron-gate --chronic chronicbusy"), skips["chronicbusy"], countSubject(mails, "cron-gate chronicpaused"), skips["chronicpaused"])

	// The crontabs cron reads: the files it ignores ran nothing, the one
	// it reads did; cron-gate check, in cron's namespace (so reading
	// the /etc/crontab and /etc/cron.d the daemon read), says why.
	for _, f := range []string{"ran-loose", "ran-badline", "ran-dotted"} {
		if _, err := os.Stat(w.path(f)); err == nil {
			t.Errorf("%s exists: cron ran a file it should ignore, so the rules tested are wrong", f)
		}
	}
	if n := len(tickMinutes(w, "good")); n < ticks-1 {
		t.Errorf("/etc/cron.d/good ran in %d minutes of %d", n, ticks)
	}
	checkInNamespace(t, w)

	// The watchdog, installed in the minute the job started failing,
	// alerted (issue 32, item 8: its first check muted it for good), and
	// said nothing cron would mail (no mail above names it).
	alerts := readFile(w.path("alerts"))
	if !strings.Contains(alerts, "alert failed failing\n") {
		t.Errorf("the watchdog did not alert the job failing since its install; its alerts:\n%s", alerts)
	}
	t.Logf("the watchdog's alerts: %q", alerts)
}

// checkInNamespace runs cron-gate check in a namespace set up as cron's
// was, and checks the unscheduled verdicts against what cron did.
func checkInNamespace(t *testing.T, w *world) {
	t.Helper()
	setup := strings.ReplaceAll(`set -e
mount -t tmpfs -o mode=755 tmpfs /etc/cron.d
for f in @W@/crond/*; do cp -p "$f" /etc/cron.d/; done
mount -t tmpfs -o mode=1730 tmpfs /var/spool/cron/crontabs
mount --bind @W@/etc-crontab /etc/crontab
exec "$@"
`, "@W@", w.dir)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", setup, "sh",
		filepath.Join(w.bin, "cron-gate"), "check", "--json", "--dry-run")
	cmd.Env = append(os.Environ(), "CRON_GATE_CONFIG="+w.path("config.toml"), "CRON_GATE_CACHE_DIR="+w.path("cache"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cron-gate check: %v\n%s", err, out)
	}
	var res struct {
		Conditions []struct{ Gate, Condition, Verdict, Detail string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	want := map[string][]string{
		"good":    {"ok", "in /etc/cron.d/good:"},
		"loose":   {"bad", "/etc/cron.d/loose:8: cron ignores the file: INSECURE MODE (group/other writable: mode 0664)"},
		"badline": {"bad", "/etc/cron.d/badline:8: cron ignores the whole file: line 9: bad minute"},
	}
	for _, c := range res.Conditions {
		if exp, ok := want[c.Gate]; ok && c.Condition == "unscheduled" {
			if c.Verdict != exp[0] || !strings.Contains(c.Detail, exp[1]) {
				t.Errorf("check says %s is %s (%s); cron did what %q says", c.Gate, c.Verdict, c.Detail, exp[1])
			}
			delete(want, c.Gate)
		}
	}
	if len(want) > 0 {
		t.Errorf("check --json judged no unscheduled condition for %v:\n%s", want, out)
	}
}

func waitFile(t *testing.T, files ...string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; {
		ok := true
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%v did not appear within 30s", files)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// journal returns a gate's records.
func journal(w *world, gate string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(readFile(w.path("state/gates/"+gate+"/journal.jsonl")), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(l), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// tickMinutes returns the minutes ("15:04") in which a gate's runs
// started.
func tickMinutes(w *world, gate string) map[string]bool {
	m := map[string]bool{}
	for _, r := range journal(w, gate) {
		if r["event"] == "start" || r["event"] == "skip" {
			if ts, ok := r["time"].(string); ok && len(ts) >= 16 {
				m[ts[:16]] = true
			}
		}
	}
	return m
}

func countSkips(w *world, gate string) int {
	n := 0
	for _, r := range journal(w, gate) {
		if r["outcome"] == "skipped" {
			n++
		}
	}
	return n
}

func endOutcomes(w *world, gate string) []string {
	var out []string
	for _, r := range journal(w, gate) {
		if r["event"] == "end" {
			s, _ := r["outcome"].(string)
			out = append(out, s)
		}
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// readMails reads what the recording sendmail kept.
func readMails(t *testing.T, w *world) []mail {
	t.Helper()
	files, _ := filepath.Glob(w.path("mail/mail.*"))
	var out []mail
	for _, f := range files {
		head, body, _ := strings.Cut(readFile(f), "\n\n")
		m := mail{body: body}
		for _, l := range strings.Split(head, "\n") {
			if s, ok := strings.CutPrefix(l, "Subject: "); ok {
				m.subject = s
			}
		}
		out = append(out, m)
	}
	return out
}

func countSubject(mails []mail, s string) int {
	n := 0
	for _, m := range mails {
		if strings.Contains(m.subject, s) {
			n++
		}
	}
	return n
}

// lockedBuffer is cron's output, written by exec's goroutine and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
