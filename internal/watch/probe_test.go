package watch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCrontabGates(t *testing.T) {
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
0 1 * * *     root cron-gate system-job -- true
0 2 * * *     echo cron-gate-not -- x; cron-gatex y -- z
0 3 * * *     cron-gate translate -- again
`
	got := CrontabGates([]byte(tab))
	want := []string{"term-extract", "dependency-classifier", "translate", "quoted", "system-job"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

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
	got, where, err := p.CronGates(ctx)
	if err != nil || !got["a"] || len(got) != 1 || !strings.HasSuffix(where, "/tab") {
		t.Fatalf("got %v %q %v", got, where, err)
	}
	// crontab -l of a user without a crontab: exit 1, "no crontab for": empty.
	p.CrontabCommand = []string{script(t, dir, "none", "echo 'no crontab for pi' >&2; exit 1\n")}
	if got, _, err := p.CronGates(ctx); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no crontab: %v %v", got, err)
	}
	// Any other failure is an error.
	p.CrontabCommand = []string{script(t, dir, "bad", "echo 'permission denied' >&2; exit 1\n")}
	if _, _, err := p.CronGates(ctx); err == nil || !strings.Contains(err.Error(), "exit 1: permission denied") {
		t.Fatalf("failing crontab: %v", err)
	}
	p.CrontabCommand = []string{filepath.Join(dir, "missing")}
	if _, _, err := p.CronGates(ctx); err == nil {
		t.Fatal("missing command: no error")
	}
	// Not read at all.
	p.CrontabCommand = nil
	if got, _, err := p.CronGates(ctx); got != nil || err != nil {
		t.Fatalf("nothing to read: %v %v", got, err)
	}
	// cron.d: files cron reads (not x.dpkg-old), and single files.
	crond := filepath.Join(dir, "cron.d")
	os.Mkdir(crond, 0o755)
	os.WriteFile(filepath.Join(crond, "blog"), []byte("0 * * * * pi cron-gate b -- true\n"), 0o644)
	os.WriteFile(filepath.Join(crond, "blog.dpkg-old"), []byte("0 * * * * pi cron-gate old -- true\n"), 0o644)
	sys := filepath.Join(dir, "crontab")
	os.WriteFile(sys, []byte("0 * * * * root cron-gate c -- true\n"), 0o644)
	p.CronD = []string{crond, sys, filepath.Join(dir, "nonexistent")}
	got, _, err = p.CronGates(ctx)
	if err != nil || !reflect.DeepEqual(got, map[string]bool{"b": true, "c": true}) {
		t.Fatalf("cron.d: %v %v", got, err)
	}
}

// A probe command that hangs is killed, with whatever it started.
func TestSystemProbeTimeout(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	p := &SystemProbe{Timeout: 200 * time.Millisecond,
		CrontabCommand: []string{script(t, dir, "hang", "sleep 60 & echo $! > "+pidfile+"; wait\n")}}
	start := time.Now()
	_, _, err := p.CronGates(context.Background())
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
// refused at once: opening a FIFO nobody writes to would block the check
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
			if _, _, err := p.CronGates(context.Background()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("cron_d %s: error %v, want refused as not a regular file", f, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reading a FIFO or /dev/zero named in the config still hangs after 30s")
	}
}
