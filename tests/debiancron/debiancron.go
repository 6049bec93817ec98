// Package debiancron asks Debian's cron itself whether it reads a
// crontab, for tests that hold this project's readers to it: `crontab
// -n FILE`, Debian's dry run ("checks the syntax, then bails out"),
// reads a user's crontab with the same code as the daemon (env.c's
// load_env, entry.c's load_entry, stopping at the first error as the
// daemon's load_user does).
//
// crontab writes its temporary copy into the spool dir and removes it.
// As root the checks run in a mount namespace of their own with a
// private tmpfs on the spool dir (unshare(1)), so that nothing of the
// host's is touched; as another user crontab does what it does for any
// user's check.
package debiancron

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SpoolDir is Debian's crontab spool dir.
const SpoolDir = "/var/spool/cron/crontabs"

// Available reports whether crontab on PATH is Debian's, with -n.
func Available() bool {
	out, _ := run("crontab", "-h")
	return strings.Contains(out, "dry run")
}

// The words of Result for what crontab refuses without a field's word.
const (
	MissingNewline = "missing newline"
	TooLong        = "too long"
)

// Result is Debian's answer for one crontab: accepted, or the word it
// printed for the first line it could not read ("bad minute"), or
// MissingNewline, or TooLong.
type Result struct {
	Accepted bool
	Word     string
}

// Check runs `crontab -n` on each text (one crontab each, in a user's
// format) in dir, a directory of the caller's that crontab can read, and
// returns the answers in order. One shell runs every check.
func Check(dir string, texts []string) ([]Result, error) {
	for i, t := range texts {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte(t), 0o644); err != nil {
			return nil, err
		}
	}
	loop := fmt.Sprintf(`for i in $(seq 0 %d); do printf '%%s\t%%s\n' "$i" "$(crontab -n %s/$i 2>&1 | tr '\n' ' ')"; done`, len(texts)-1, dir)
	argv := []string{"sh", "-c", loop}
	if os.Geteuid() == 0 {
		argv = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
			"mount -t tmpfs -o mode=1730 tmpfs " + SpoolDir + " && " + loop}
	}
	out, err := run(argv[0], argv[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(argv[:3], " "), err, out)
	}
	res := make([]Result, len(texts))
	seen := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		idx, text, _ := strings.Cut(l, "\t")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(texts) {
			return nil, fmt.Errorf("unexpected line from the crontab loop: %q", l)
		}
		seen++
		switch {
		case strings.Contains(text, "successfully checked"):
			res[i] = Result{Accepted: true}
			continue
		case strings.Contains(text, "missing newline before EOF"):
			res[i] = Result{Word: MissingNewline}
			continue
		case strings.Contains(text, "crontab is too long"):
			res[i] = Result{Word: TooLong}
			continue
		}
		// "/dir/i":0: bad minute errors in crontab file, can't install.
		_, after, ok := strings.Cut(text, ": ")
		word, _, _ := strings.Cut(after, " errors in crontab")
		if !ok || strings.TrimSpace(word) == "" {
			return nil, fmt.Errorf("crontab -n on %q said %q", texts[i], text)
		}
		res[i] = Result{Word: strings.TrimSpace(word)}
	}
	if seen != len(texts) {
		return nil, errors.New("the crontab loop did not answer for every crontab")
	}
	return res, nil
}

// run runs a command with a generous bound, for a hang to fail the test
// rather than the suite.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
