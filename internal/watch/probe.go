//go:build linux

package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// Probe answers the watchdog's questions about the world outside the state
// dir. SystemProbe asks the system; tests inject their own.
type Probe interface {
	// CronGates returns the names of the gates that cron-gate lines of
	// the crontab and cron.d files run, and where it looked ("crontab -l,
	// /etc/cron.d"); a nil map and nil error when it looks nowhere.
	CronGates(ctx context.Context) (gates map[string]bool, where string, err error)
	// TimerState tells whether a systemd unit is active, and its state
	// ("active", "inactive", "failed"...).
	TimerState(ctx context.Context, unit string) (active bool, state string, err error)
	// FailureHandled tells whether a worker's JSON state file says the
	// worker reports its failure itself (key has a truthy value), and why
	// not when it cannot tell.
	FailureHandled(file, key string) (handled bool, why string)
}

// ProbeTimeout bounds each command a SystemProbe runs.
const ProbeTimeout = 10 * time.Second

// SystemProbe is the Probe of a real system, from the [check] settings.
type SystemProbe struct {
	CrontabCommand   []string // empty: the crontab is not read
	CronD            []string // directories (every file in them) and files
	SystemctlCommand []string // "is-active UNIT" is appended
	Timeout          time.Duration
}

// NewSystemProbe returns the probe the config describes.
func NewSystemProbe(c gate.CheckConfig) *SystemProbe {
	return &SystemProbe{CrontabCommand: c.CrontabCommandOr(), CronD: c.CronD,
		SystemctlCommand: c.SystemctlCommandOr(), Timeout: ProbeTimeout}
}

// CronGates implements Probe.
func (p *SystemProbe) CronGates(ctx context.Context) (map[string]bool, string, error) {
	if len(p.CrontabCommand) == 0 && len(p.CronD) == 0 {
		return nil, "", nil
	}
	data, where, err := p.CrontabText(ctx)
	if err != nil {
		return nil, "", err
	}
	found := map[string]bool{}
	for _, g := range CrontabGates(data) {
		found[g] = true
	}
	return found, where, nil
}

// CrontabText returns what cron reads: the output of the crontab command
// and every cron file of CronD, one after the other, and where it came
// from. A user without a crontab has an empty one.
func (p *SystemProbe) CrontabText(ctx context.Context) ([]byte, string, error) {
	var all []byte
	var where []string
	if len(p.CrontabCommand) > 0 {
		where = append(where, strings.Join(p.CrontabCommand, " "))
		out, stderr, code, err := runProbe(ctx, p.timeout(), p.CrontabCommand)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("%s: %v", strings.Join(p.CrontabCommand, " "), err)
		case code != 0 && len(bytes.TrimSpace(out)) == 0 && bytes.Contains(stderr, []byte("no crontab for")):
			// crontab -l of a user without a crontab: nothing is scheduled.
		case code != 0:
			return nil, "", fmt.Errorf("%s: exit %d: %s", strings.Join(p.CrontabCommand, " "), code, firstLine(stderr))
		default:
			all = append(append(all, out...), '\n')
		}
	}
	for _, d := range p.CronD {
		where = append(where, d)
		files, err := cronFiles(d)
		if err != nil {
			return nil, "", err
		}
		for _, f := range files {
			data, err := readSmall(f, 4<<20)
			if err != nil {
				return nil, "", fmt.Errorf("cron file %s: %v", f, err)
			}
			all = append(append(all, data...), '\n')
		}
	}
	return all, strings.Join(where, ", "), nil
}

// cronFiles lists what cron reads of a cron_d entry: a file is itself; a
// directory is every regular file in it whose name cron accepts (letters,
// digits, '_' and '-': Debian's cron ignores the rest, e.g. "x.dpkg-old").
// A missing entry is no file.
func cronFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron_d %s: %v", path, safeopen.Cause(err))
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("cron_d %s: %v", path, safeopen.Cause(err))
	}
	var out []string
	for _, e := range ents {
		if !cronFileName(e.Name()) {
			continue
		}
		f := filepath.Join(path, e.Name())
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}

func cronFileName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// TimerState implements Probe: `SYSTEMCTL is-active UNIT` exits 0 when the
// unit is active and prints its state either way. Anything else (the
// command cannot run, prints nothing) is an error.
func (p *SystemProbe) TimerState(ctx context.Context, unit string) (bool, string, error) {
	argv := append(append([]string{}, p.SystemctlCommand...), "is-active", unit)
	out, stderr, code, err := runProbe(ctx, p.timeout(), argv)
	if err != nil {
		return false, "", fmt.Errorf("%s: %v", strings.Join(argv, " "), err)
	}
	state := firstLine(out)
	if code == 0 {
		return true, "active", nil
	}
	if state == "" || strings.ContainsAny(state, " \t") {
		msg := firstLine(stderr)
		if msg == "" {
			msg = state
		}
		return false, "", fmt.Errorf("%s: exit %d: %s", strings.Join(argv, " "), code, msg)
	}
	return false, state, nil
}

// FailureHandled implements Probe. The file is read (at most 1 MiB) and
// parsed as a JSON object; key names a top-level member whose value is
// truthy as in Python: true, a non-zero number, a non-empty string, array
// or object. A missing or unreadable file, or no such member, is not
// handled.
func (p *SystemProbe) FailureHandled(file, key string) (bool, string) {
	return failureHandled(file, key)
}

func failureHandled(file, key string) (bool, string) {
	data, err := readSmall(file, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return false, ""
	}
	if err != nil {
		return false, fmt.Sprintf("%s: %v", file, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return false, fmt.Sprintf("%s is not a JSON object", file)
	}
	v, ok := doc[key]
	if !ok || !truthy(v) {
		return false, ""
	}
	return true, fmt.Sprintf("%s in %s is set", key, file)
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

func (p *SystemProbe) timeout() time.Duration {
	if p.Timeout <= 0 {
		return ProbeTimeout
	}
	return p.Timeout
}

// runProbe runs argv (stdin /dev/null, in a process group of its own that
// is killed when the timeout or ctx ends) and returns its output and exit
// code; err is set only when it could not be run or was stopped.
func runProbe(ctx context.Context, timeout time.Duration, argv []string) (stdout, stderr []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out, errb limitedBuffer
	out.max, errb.max = 8<<20, 4<<10
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	killGroup(cmd)
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, nil, 0, fmt.Errorf("did not finish within %v", timeout)
	case errors.As(err, &ee) && ee.Exited():
		return out.Bytes(), errb.Bytes(), ee.ExitCode(), nil
	case err != nil:
		return nil, nil, 0, err
	}
	return out.Bytes(), errb.Bytes(), 0, nil
}

// killGroup puts cmd in a process group of its own and makes the end of
// its context kill the whole group, so that nothing it started outlives a
// timeout or holds its output pipes open.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		return nil
	}
	cmd.WaitDelay = time.Second
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return safetext.Cut(strings.TrimSpace(s), 200)
}

// readSmall reads a file another program keeps (a crontab in cron_d, a
// worker's state file): without blocking and only if it is a regular file,
// so that a FIFO or a device named there can neither hang nor flood the
// check (package safeopen), and at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	data, _, err := safeopen.ReadFile(path, max, true)
	if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
		if errors.Is(err, safeopen.ErrTooLarge) {
			return nil, fmt.Errorf("larger than %d bytes", max)
		}
		return nil, fmt.Errorf("is %s, not a regular file", fe.Kind)
	}
	return data, err
}
