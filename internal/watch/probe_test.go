package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSystemProbeCrontab(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	p := &SystemProbe{CrontabCommand: []string{script(t, dir, "tab", "echo '* * * * * cron-gate a -- true'\n")}}
	scan, err := p.Crontabs(ctx)
	if err != nil || len(scan.Jobs) != 1 || scan.Jobs[0].Where() != "crontab -l:1" || !strings.HasSuffix(scan.Where, "/tab") {
		t.Fatalf("got %+v %v", scan, err)
	}
	// crontab -l of a user without a crontab: exit 1, "no crontab for": empty.
	p.CrontabCommand = []string{script(t, dir, "none", "echo 'no crontab for pi' >&2; exit 1\n")}
	if scan, err := p.Crontabs(ctx); err != nil || scan == nil || len(scan.Jobs) != 0 {
		t.Fatalf("no crontab: %+v %v", scan, err)
	}
	// Any other failure is an error.
	p.CrontabCommand = []string{script(t, dir, "bad", "echo 'permission denied' >&2; exit 1\n")}
	if _, err := p.Crontabs(ctx); err == nil || !strings.Contains(err.Error(), "exit 1: permission denied") {
		t.Fatalf("failing crontab: %v", err)
	}
	p.CrontabCommand = []string{filepath.Join(dir, "missing")}
	if _, err := p.Crontabs(ctx); err == nil {
		t.Fatal("missing command: no error")
	}
	// Not read at all.
	p.CrontabCommand = nil
	if scan, err := p.Crontabs(ctx); scan != nil || err != nil {
		t.Fatalf("nothing to read: %+v %v", scan, err)
	}
}

// TestSystemProbeCronD: the system crontabs, laid out as cron reads them
// (database.c): a file of /etc/cron.d counts when its name is made of
// [A-Za-z0-9_-], it is owned by root, not group- or other-writable, has
// one link, and a symlink to it is owned by root; the others' jobs are
// listed as ignored, with cron's word.
func TestSystemProbeCronD(t *testing.T) {
	dir := t.TempDir()
	crond := filepath.Join(dir, "cron.d")
	if err := os.Mkdir(crond, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(name, gate string, mode os.FileMode) string {
		t.Helper()
		f := filepath.Join(crond, name)
		if err := os.WriteFile(f, []byte("0 * * * * root cron-gate "+gate+" -- true\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		return f
	}
	put("blog", "b", 0o644)
	put("blog.dpkg-old", "old", 0o644)
	put(".hidden", "hidden", 0o644)
	put("groupw", "gw", 0o664)
	put("otherw", "ow", 0o646)
	linked := put("linked", "ln", 0o644)
	if err := os.Link(linked, filepath.Join(dir, "second-link")); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("0 * * * * root cron-gate sl -- true\n"), 0o644)
	if err := os.Symlink(target, filepath.Join(crond, "symlinked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(crond, "dangling")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(crond, "subdir"), 0o755)
	os.WriteFile(filepath.Join(crond, "badline"), []byte("0 * * * * root cron-gate bl -- true\n5/15 * * * * root true\n"), 0o644)
	os.WriteFile(filepath.Join(crond, "nouser"), []byte("0 * * * * ghost cron-gate nu -- true\n"), 0o644)
	sys := filepath.Join(dir, "crontab")
	os.WriteFile(sys, []byte("0 * * * * root cron-gate c -- true\n"), 0o644)
	me := uint32(os.Geteuid())
	p := &SystemProbe{CronD: []string{sys, crond, filepath.Join(dir, "nonexistent")}, RootUID: me,
		UserExists: func(u string) bool { return u == "root" }}
	scan, err := p.Crontabs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range scan.Jobs {
		got[j.Gate] = j.Rejected
	}
	want := map[string]string{
		"c": "", "b": "", "sl": "",
		"gw": "INSECURE MODE (group/other writable: mode 0664)",
		"ow": "INSECURE MODE (group/other writable: mode 0646)",
		"ln": "NUMBER OF HARD LINKS > 1 (2 links)",
		"bl": "cron ignores the whole file: line 2: bad minute",
		"nu": "bad username: no user \"ghost\"",
	}
	if len(got) != len(want) {
		t.Errorf("gates %v, want %v", got, want)
	}
	for g, w := range want {
		r, ok := got[g]
		if !ok || w == "" && r != "" || !strings.Contains(r, w) {
			t.Errorf("gate %s: rejected %q (found %v), want %q", g, r, ok, w)
		}
	}
	if runs, _ := scan.Find("b"); len(runs) != 1 || runs[0].Where() != filepath.Join(crond, "blog")+":1" {
		t.Errorf("Find(b) = %+v", runs)
	}
	// Owned by another user than root: WRONG FILE OWNER.
	p.RootUID = me + 1
	scan, err = p.Crontabs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range scan.Jobs {
		if !strings.Contains(j.Rejected, "WRONG FILE OWNER") && !strings.Contains(j.Rejected, "WRONG SYMLINK OWNER") {
			t.Errorf("%s: %q, want WRONG FILE OWNER", j.Where(), j.Rejected)
		}
	}
}

// A probe command that hangs is killed, with whatever it started.
func TestSystemProbeTimeout(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	p := &SystemProbe{Timeout: 200 * time.Millisecond,
		CrontabCommand: []string{script(t, dir, "hang", "sleep 60 & echo $! > "+pidfile+"; wait\n")}}
	start := time.Now()
	_, err := p.Crontabs(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("hanging crontab: %v", err)
	}
	// a hang-catcher: the probe sleeps 60 s
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %v", d)
	}
	data, _ := os.ReadFile(pidfile)
	if pid := strings.TrimSpace(string(data)); pid != "" {
		waitGone(t, pid)
	}
}

// waitGone waits (at most 5 s) until process pid is gone or a zombie: a
// SIGKILLed process exits soon, not at once.
func waitGone(t *testing.T, pid string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s survived: %s", pid, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSystemProbeTimer(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sc := script(t, dir, "systemctl", `[ "$1" = is-active ] || exit 9
case "$2" in
on.timer) echo active ;;
off.timer) echo inactive; exit 3 ;;
failed.timer) echo failed; exit 3 ;;
*) echo "System has not been booted with systemd" >&2; exit 1 ;;
esac
`)
	p := &SystemProbe{SystemctlCommand: []string{sc}}
	for unit, want := range map[string]string{"on.timer": "active", "off.timer": "inactive", "failed.timer": "failed"} {
		active, state, err := p.TimerState(ctx, unit)
		if err != nil || state != want || active != (want == "active") {
			t.Errorf("%s: %v %q %v", unit, active, state, err)
		}
	}
	if _, _, err := p.TimerState(ctx, "x.timer"); err == nil || !strings.Contains(err.Error(), "not been booted") {
		t.Errorf("no systemd: %v", err)
	}
}

func TestFailureHandled(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "state.json")
	for content, want := range map[string]bool{
		`{"failure_notice": true}`:               true,
		`{"failure_notice": {"at": 1}}`:          true,
		`{"failure_notice": "2026-11-29"}`:       true,
		`{"failure_notice": 1}`:                  true,
		`{"failure_notice": false}`:              false,
		`{"failure_notice": null}`:               false,
		`{"failure_notice": ""}`:                 false,
		`{"failure_notice": 0}`:                  false,
		`{"failure_notice": {}}`:                 false,
		`{"other": true}`:                        false,
		`not json`:                               false,
		`["failure_notice"]`:                     false,
		`{"failure_notice": [1], "x": "y"}`:      true,
		`{"nested": {"failure_notice": true}}`:   false,
		`{"failure_notice": true, "extra": [1]}`: true,
	} {
		os.WriteFile(f, []byte(content), 0o644)
		if got, why := failureHandled(f, "failure_notice"); got != want {
			t.Errorf("%s: handled %v (%s), want %v", content, got, why, want)
		}
	}
	if got, why := failureHandled(filepath.Join(dir, "missing"), "failure_notice"); got || why != "" {
		t.Errorf("missing file: %v %q", got, why)
	}
}

// A FIFO or a device where cron_d or failure_state_file names a file is
// refused at once (cron_d: no jobs there, as cron reads none): opening a FIFO nobody writes to would block the check
// for ever, and a device could feed it without end.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, f := range []string{fifo, zero} {
			if got, why := failureHandled(f, "failure_notice"); got || !strings.Contains(why, "not a regular file") {
				t.Errorf("failure_state_file %s: handled %v (%q), want refused as not a regular file", f, got, why)
			}
			p := &SystemProbe{CronD: []string{f}}
			if scan, err := p.Crontabs(context.Background()); err != nil || len(scan.Jobs) != 0 {
				t.Errorf("cron_d %s: %+v, %v; want no job (cron reads nothing there)", f, scan, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reading a FIFO or /dev/zero named in the config still hangs after 30s")
	}
}
