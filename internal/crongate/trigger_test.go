//go:build linux

package crongate

import (
	"os/user"
	"reflect"
	"strings"
	"testing"
)

// TestSplitPercent: a crontab command is cut as cron's child_process cuts
// it (crontab(5)'s mail example among them).
func TestSplitPercent(t *testing.T) {
	for _, c := range []struct{ text, cmd, in string }{
		{"true", "true", ""},
		{`mail -s "It's 10pm" joe%Joe,%%Where are your kids?%`, `mail -s "It's 10pm" joe`, "Joe,\n\nWhere are your kids?\n"},
		{`date +\%s`, `date +%s`, ""},
		{`echo a\\b \x`, `echo a\b \x`, ""},
		{`cat %one\%two\x`, `cat `, "one%two\\x\n"},
		{`cat %a\`, `cat `, "a\\\n"},
		{`cat %`, `cat `, ""},
		{`cat %%`, `cat `, "\n"},
	} {
		cmd, in := splitPercent(c.text)
		if cmd != c.cmd || in != c.in {
			t.Errorf("splitPercent(%q) = %q, %q; want %q, %q", c.text, cmd, in, c.cmd, c.in)
		}
	}
}

// FuzzSplitPercent: a crontab line is outside input; cutting it never
// panics, and a command without % or backslash is left whole, with no
// input.
func FuzzSplitPercent(f *testing.F) {
	f.Add(`mail joe%Joe,%%Where?%`)
	f.Add(`a\%b\\%c\`)
	f.Fuzz(func(t *testing.T, text string) {
		cmd, in := splitPercent(text)
		if !strings.ContainsAny(text, `%\`) && (cmd != text || in != "") {
			t.Fatalf("splitPercent(%q) = %q, %q", text, cmd, in)
		}
		if len(cmd) > len(text) {
			t.Fatalf("command %q longer than %q", cmd, text)
		}
	})
}

// TestCronEnv: the crontab's settings first (a later one wins), then
// cron's defaults for SHELL, HOME and PATH only where the crontab sets
// none, and LOGNAME and USER from the password database always.
func TestCronEnv(t *testing.T) {
	pi := &user.User{Username: "pi", HomeDir: "/home/pi"}
	got := cronEnv([]string{"PATH=/opt/bin", "LOGNAME=root", "MAILTO=ops", "PATH=/opt/bin:/bin"}, pi)
	want := []string{"PATH=/opt/bin:/bin", "LOGNAME=pi", "MAILTO=ops", "SHELL=/bin/sh", "HOME=/home/pi", "USER=pi"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cronEnv = %q, want %q", got, want)
	}
	if got := cronEnv(nil, pi); !reflect.DeepEqual(got, []string{"SHELL=/bin/sh", "HOME=/home/pi", "PATH=/usr/bin:/bin", "LOGNAME=pi", "USER=pi"}) {
		t.Errorf("cronEnv(nil) = %q", got)
	}
}

// TestCrontabUser: whose crontab crontab_command lists, as crontab's
// getopt reads -u.
func TestCrontabUser(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-l", "-u", "pi"}, "pi"},
		{[]string{"-upi", "-l"}, "pi"},
		{[]string{"-lu", "pi"}, "pi"},
		{[]string{"-l"}, ""},
		{[]string{"-l", "--", "-u", "pi"}, ""},
		{[]string{"-u"}, ""},
	} {
		if got := crontabUser(c.args); got != c.want {
			t.Errorf("crontabUser(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
