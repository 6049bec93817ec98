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
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// Probe answers the watchdog's questions about the world outside the state
// dir. SystemProbe asks the system; tests inject their own.
type Probe interface {
	// Crontabs reads the crontabs cron reads (the user's, /etc/crontab,
	// /etc/cron.d: [check] crontab_command and cron_d) as Debian's cron
	// reads them, and returns their cron-gate jobs; a nil scan and nil
	// error when it reads none. An error means the user's crontab could
	// not be listed.
	Crontabs(ctx context.Context) (*CronScan, error)
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
	CrontabCommand   []string // the user's crontab (crontab -l); empty: not read
	CronD            []string // system crontabs: directories (their files cron would read) and files
	SystemctlCommand []string // "is-active UNIT" is appended
	Timeout          time.Duration
	// UserExists tells whether a system crontab line's user exists
	// (cron's getpwnam); nil: the system's user database.
	UserExists func(name string) bool
	// RootUID is the owner cron requires of a system crontab: root (0).
	// Tests set their own, to lay out files as cron reads them without
	// being root.
	RootUID uint32
}

// NewSystemProbe returns the probe the config describes.
func NewSystemProbe(c gate.CheckConfig) *SystemProbe {
	return &SystemProbe{CrontabCommand: c.CrontabCommandOr(), CronD: c.CronDOr(),
		SystemctlCommand: c.SystemctlCommandOr(), Timeout: ProbeTimeout}
}

// CronScan is what the crontabs cron reads say of cron-gate jobs.
type CronScan struct {
	Where string // the crontabs read, for messages: "crontab -l, /etc/crontab, /etc/cron.d"
	// Jobs are every cron-gate job found, in the order read; those cron
	// does not run have Rejected set.
	Jobs []CrontabJob
	// Unreadable are the crontabs that could not be read, "SOURCE: why":
	// cron may run lines there that this scan does not know of.
	Unreadable []string
}

// Find returns the jobs that run gate g: those cron runs, and those it
// ignores (Rejected says why).
func (s *CronScan) Find(g string) (runs, ignored []CrontabJob) {
	if s == nil {
		return nil, nil
	}
	for _, j := range s.Jobs {
		switch {
		case j.Gate != g:
		case j.Rejected == "":
			runs = append(runs, j)
		default:
			ignored = append(ignored, j)
		}
	}
	return runs, ignored
}

// UserCrontab is a CrontabJob's Source for the user's crontab, as listed
// by crontab_command.
const UserCrontab = "crontab -l"

// Crontabs implements Probe: the user's crontab as crontab_command lists
// it (a user without one has an empty one), then each cron_d entry as
// cronFiles lists it, each read by ReadCrontab. A system crontab cron
// would refuse (cronFile) still has its jobs listed, rejected with the
// file's reason.
func (p *SystemProbe) Crontabs(ctx context.Context) (*CronScan, error) {
	if len(p.CrontabCommand) == 0 && len(p.CronD) == 0 {
		return nil, nil
	}
	scan := &CronScan{}
	var where []string
	if len(p.CrontabCommand) > 0 {
		where = append(where, strings.Join(p.CrontabCommand, " "))
		data, err := p.userCrontab(ctx)
		if err != nil {
			return nil, err
		}
		jobs, _ := ReadCrontab(data, UserCrontab, false, nil)
		scan.Jobs = append(scan.Jobs, jobs...)
	}
	users := p.UserExists
	if users == nil {
		users = newUserLookup(p.timeout())
	}
	for _, d := range p.CronD {
		where = append(where, d)
		files, err := cronFiles(d)
		if err != nil {
			scan.Unreadable = append(scan.Unreadable, err.Error())
			continue
		}
		for _, f := range files {
			data, refused, err := p.cronFile(f)
			if err != nil {
				scan.Unreadable = append(scan.Unreadable, err.Error())
				continue
			}
			jobs, _ := ReadCrontab(data, f, true, users)
			for k := range jobs {
				if refused != "" {
					jobs[k].Rejected = "cron ignores the file: " + refused
				}
			}
			scan.Jobs = append(scan.Jobs, jobs...)
		}
	}
	scan.Where = strings.Join(where, ", ")
	return scan, nil
}

// userCrontab lists the user's crontab with crontab_command.
func (p *SystemProbe) userCrontab(ctx context.Context) ([]byte, error) {
	out, stderr, code, err := runProbe(ctx, p.timeout(), p.CrontabCommand)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %v", strings.Join(p.CrontabCommand, " "), err)
	case code != 0 && len(bytes.TrimSpace(out)) == 0 && bytes.Contains(stderr, []byte("no crontab for")):
		return nil, nil // crontab -l of a user without a crontab: nothing is scheduled
	case code != 0:
		return nil, fmt.Errorf("%s: exit %d: %s", strings.Join(p.CrontabCommand, " "), code, firstLine(stderr))
	}
	return out, nil
}

// cronFiles lists what cron reads of a cron_d entry: a file is itself; a
// directory is its entries whose names Debian's cron accepts (database.c:
// not beginning with '.', and only letters, digits, '_' and '-', the
// rule of valid_name without cron's -l option: "x.dpkg-old" is skipped),
// in name order. A missing entry is no file.
func cronFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, safeopen.Cause(err))
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, safeopen.Cause(err))
	}
	var out []string
	for _, e := range ents {
		if cronFileName(e.Name()) {
			out = append(out, filepath.Join(path, e.Name()))
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

// cronFile reads a system crontab and says whether cron would read it,
// following database.c's process_crontab for /etc/crontab and the files
// of /etc/cron.d: a symlink must be owned by root (WRONG SYMLINK OWNER)
// and lead to a file (CAN'T OPEN SYMLINK); the file must be owned by
// root (WRONG FILE OWNER), a regular file (NOT A REGULAR FILE), not
// group- or other-writable (INSECURE MODE) and have one link (NUMBER OF
// HARD LINKS > 1). refused is cron's word and why; err means the file
// could not be read here (cron, as root, may read it). The file is read
// as readSmall reads: never blocking, at most 4 MiB.
func (p *SystemProbe) cronFile(path string) (data []byte, refused string, err error) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		if err == unix.ENOENT {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	if lst.Mode&unix.S_IFMT == unix.S_IFLNK && lst.Uid != p.RootUID {
		refused = "WRONG SYMLINK OWNER (the symlink is owned by uid " + strconv.Itoa(int(lst.Uid)) + ", not root)"
	}
	data, st, err := safeopen.ReadFile(path, 4<<20, true)
	if err != nil {
		if _, ok := errors.AsType[*safeopen.FileError](err); ok && !errors.Is(err, safeopen.ErrTooLarge) {
			return nil, "", nil // a FIFO, a directory...: cron reads nothing there
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil // a dangling symlink: CAN'T OPEN SYMLINK
		}
		return nil, "", fmt.Errorf("%s: %v", path, safeopen.Cause(err))
	}
	switch {
	case refused != "":
	case st.Uid != p.RootUID:
		refused = "WRONG FILE OWNER (owned by uid " + strconv.Itoa(int(st.Uid)) + ", not root)"
	case st.Mode&(unix.S_IWGRP|unix.S_IWOTH) != 0:
		refused = fmt.Sprintf("INSECURE MODE (group/other writable: mode %04o)", st.Mode&0o7777)
	case st.Nlink != 1:
		refused = "NUMBER OF HARD LINKS > 1 (" + strconv.Itoa(int(st.Nlink)) + " links)"
	}
	return data, refused, nil
}

// newUserLookup returns getpwnam for system crontab lines, remembering
// its answers: the user database (os/user: /etc/passwd, or NSS in a cgo
// build), then for a name not found there `getent passwd NAME`, which
// asks NSS (LDAP, sssd) as cron does. A user that cannot be looked up
// either way counts as existing: a line is never called rejected on a
// guess.
func newUserLookup(timeout time.Duration) func(string) bool {
	known := map[string]bool{}
	return func(name string) bool {
		if v, ok := known[name]; ok {
			return v
		}
		exists := true
		if _, err := user.Lookup(name); err != nil {
			if _, unknown := err.(user.UnknownUserError); unknown {
				_, _, code, err := runProbe(context.Background(), timeout, []string{"getent", "passwd", name})
				exists = err != nil || code != 2 // getent: 2 is "not found"
			}
		}
		known[name] = exists
		return exists
	}
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
