//go:build linux

package crongate

// cron-gate adopt: put a gate in front of every job of a crontab
// (docs/cron-gate.md, "Adopting a crontab"). What it proposes is
// adoptplan.go's; here the crontab is read, the diff printed, and with
// --apply the backup made and the crontab installed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/statefile"
)

// AdoptCmd is `cron-gate adopt`.
type AdoptCmd struct {
	File    string   `placeholder:"FILE" xor:"source" help:"Adopt this crontab file instead of your crontab (crontab -l). Under /etc/cron.d, or /etc/crontab, it has a user field."`
	System  bool     `help:"FILE has a user field after the schedule (/etc/crontab's format), wherever it is."`
	User    string   `placeholder:"USER" xor:"source" help:"Adopt USER's crontab (crontab -u USER; root only)."`
	Name    []string `placeholder:"LINE=NAME" help:"Name the gate of crontab line LINE (repeatable); otherwise named after the program or script the line runs."`
	Apply   bool     `help:"Install the result (after a backup); without it, only print the diff."`
	Declare bool     `help:"Also declare each new gate in the config, with an interval from its schedule (with --apply; else show what would be added)."`
}

// adoptBackupLayout is the time in a backup's name.
const adoptBackupLayout = "20060102T150405"

// maxCrontabBytes bounds what adopt reads: cron reads at most 10,000
// lines of at most 1,000 bytes.
const maxCrontabBytes = 10 << 20

// check refuses --system without --file and --user for anyone but root.
func (c *AdoptCmd) check([]string) error {
	if c.System && c.File == "" {
		return usageError{"--system goes with --file"}
	}
	if c.User != "" && os.Geteuid() != 0 {
		return usageError{"--user needs root; to adopt your own crontab, leave it out"}
	}
	return nil
}

// Run is `cron-gate adopt`.
func (c *AdoptCmd) Run(e *env) error {
	cfg, err := e.config()
	if err != nil {
		return err
	}
	names := map[int]string{}
	for _, kv := range c.Name {
		l, n, ok := strings.Cut(kv, "=")
		line, err := strconv.Atoi(l)
		if !ok || err != nil || line < 1 {
			return usageError{fmt.Sprintf("--name %s: write it as LINE=NAME (a line number)", kv)}
		}
		names[line] = n
	}
	src, err := c.source()
	if err != nil {
		return err
	}
	data, err := src.read()
	if err != nil {
		return err
	}
	p, err := planAdopt(data, src.label, src.system, userExists, func(n string) bool { return cfg.Gates[n] != nil }, names)
	if err != nil {
		return err
	}
	for _, a := range p.alone {
		e.out.Warnf("%s:%d: left alone: %s", src.label, a.line, a.reason)
	}
	// The adopted lines run cron-gate by name: say so once when cron's
	// PATH for one of them has none (a PREFIX=/usr/local install).
	for _, w := range p.wrapped {
		if !onPath(w.path, "cron-gate") {
			e.out.Warnf("%s:%d: cron runs this line with PATH=%s, where there is no cron-gate; add a PATH= line above it that holds cron-gate's directory", src.label, w.line, w.path)
			break
		}
	}
	diff := unifiedDiff(src.label, p)
	if safetext.IsTerminal(os.Stdout) {
		diff = safetext.Text(diff)
	}
	os.Stdout.WriteString(diff)
	if len(p.wrapped) == 0 {
		if safetext.IsTerminal(os.Stderr) {
			e.out.Donef("%s: nothing to adopt", src.label)
		}
		return nil
	}
	var decls []gateconf.Declaration
	for _, w := range p.wrapped {
		decls = append(decls, gateconf.Declaration{Name: w.gate, Interval: scheduleInterval(w.schedule)})
	}
	if c.Declare && !c.Apply {
		for _, l := range strings.Split(strings.TrimSpace(gateconf.DeclarationText(decls, "\n")), "\n") {
			if l != "" {
				e.out.Donef("--declare would add to config %s: %s", cfg.Path, l)
			}
		}
	}
	if !c.Apply {
		return nil
	}
	if c.Declare {
		// The state dir holds the config lock: created as a run creates it.
		sd, err := statefile.OpenDir(gate.StateDirFor(cfg))
		if err != nil {
			return errors.New(safetext.Line(err.Error()))
		}
		sd.Close()
		added, err := gateconf.DeclareGates(cfg.Path, decls, gate.ConfigLockPath(gate.StateDirFor(cfg)))
		if err != nil {
			return err
		}
		if len(added) > 0 {
			e.out.Donef("declared in config %s: %s", cfg.Path, strings.Join(added, ", "))
		}
	}
	backup, err := src.install(data, []byte(p.text()), gate.StateDirFor(cfg))
	if err != nil {
		return err
	}
	e.out.Donef("adopted %d lines of %s (backup: %s)", len(p.wrapped), src.label, backup)
	return nil
}

// adoptSource is where the crontab comes from and goes to.
type adoptSource struct {
	label  string // for the diff and messages: the file, or "crontab:USER"
	file   string // "" for a user's crontab through crontab(1)
	user   string // crontab -u USER; "" the caller's own
	system bool
}

func (c *AdoptCmd) source() (*adoptSource, error) {
	if c.File != "" {
		abs, err := filepath.Abs(c.File)
		if err != nil {
			return nil, err
		}
		sys := c.System || abs == "/etc/crontab" || filepath.Dir(abs) == "/etc/cron.d"
		return &adoptSource{label: c.File, file: c.File, system: sys}, nil
	}
	who := c.User
	if who == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("who am I: %v", err)
		}
		who = u.Username
	}
	return &adoptSource{label: "crontab:" + who, user: c.User}, nil
}

// crontabArgs is crontab(1)'s arguments for this user's crontab.
func (s *adoptSource) crontabArgs(args ...string) []string {
	if s.user != "" {
		return append([]string{"-u", s.user}, args...)
	}
	return args
}

// read reads the crontab: the file, or `crontab -l` (no crontab: empty).
func (s *adoptSource) read() ([]byte, error) {
	if s.file != "" {
		fi, err := os.Stat(s.file)
		switch {
		case err != nil:
			return nil, fmt.Errorf("crontab %s: %s", safetext.QuotePath(s.file), safetext.Line(errors.Unwrap(err).Error()))
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("crontab %s: not a regular file", safetext.QuotePath(s.file))
		case fi.Size() > maxCrontabBytes:
			return nil, fmt.Errorf("crontab %s: larger than %d bytes, more than cron reads", safetext.QuotePath(s.file), maxCrontabBytes)
		}
		data, err := os.ReadFile(s.file)
		if err != nil {
			return nil, fmt.Errorf("crontab %s: %s", safetext.QuotePath(s.file), safetext.Line(err.Error()))
		}
		return data, nil
	}
	var out, stderr bytes.Buffer
	if err := crontabCmd(s.crontabArgs("-l"), nil, &out, &stderr); err != nil {
		if strings.Contains(stderr.String(), "no crontab for") {
			return nil, nil
		}
		return nil, fmt.Errorf("crontab -l: %v: %s", err, safetext.Line(strings.TrimSpace(stderr.String())))
	}
	return out.Bytes(), nil
}

// crontabCmd runs crontab(1) with args, bounded to a minute.
func crontabCmd(args []string, stdin []byte, stdout, stderr *bytes.Buffer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "crontab", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// errChanged: the crontab changed between adopt's read and its write.
var errChanged = errors.New("changed since cron-gate read it; nothing was written (run cron-gate adopt again)")

// install writes text in place of orig, after a backup of orig, and
// returns the backup's path. A file: the backup beside it
// (FILE.cron-gate-backup-TIME, its mode), then a temporary file in its
// directory with its mode and owner, fsynced and renamed over it. A
// user's crontab: the backup in stateDir/crontab-backups (0600), then
// `crontab -`. Either way, if the crontab no longer holds orig, nothing
// is written.
func (s *adoptSource) install(orig, text []byte, stateDir string) (string, error) {
	if s.file == "" {
		now, err := s.read()
		if err != nil {
			return "", err
		}
		if !bytes.Equal(now, orig) {
			return "", fmt.Errorf("%s: %w", s.label, errChanged)
		}
		dir := filepath.Join(stateDir, "crontab-backups")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("backup dir %s: %s", safetext.QuotePath(dir), safetext.Line(err.Error()))
		}
		name := strings.TrimPrefix(s.label, "crontab:")
		backup, err := writeBackup(filepath.Join(dir, name+"."), orig, 0o600)
		if err != nil {
			return "", err
		}
		var out, stderr bytes.Buffer
		if err := crontabCmd(s.crontabArgs("-"), text, &out, &stderr); err != nil {
			return "", fmt.Errorf("crontab -: %v: %s (the crontab is unchanged; backup %s)", err, safetext.Line(strings.TrimSpace(stderr.String())), backup)
		}
		return backup, nil
	}
	// Through a symlink, the file it names is replaced; the link stays.
	target, err := filepath.EvalSymlinks(s.file)
	if err != nil {
		return "", fmt.Errorf("crontab %s: %s", safetext.QuotePath(s.file), safetext.Line(err.Error()))
	}
	t := *s
	t.file = target
	return t.installFile(orig, text)
}

// installFile is install for a file that is not a symlink.
func (s *adoptSource) installFile(orig, text []byte) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(s.file, &st); err != nil {
		return "", fmt.Errorf("crontab %s: %s", safetext.QuotePath(s.file), safetext.Line(err.Error()))
	}
	mode := fs.FileMode(st.Mode & 0o777)
	if !s.unchanged(orig, &st) {
		return "", fmt.Errorf("crontab %s: %w", safetext.QuotePath(s.file), errChanged)
	}
	backup, err := writeBackup(s.file+".cron-gate-backup-", orig, mode)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(s.file)
	// A leading dot: cron does not read the temporary file in /etc/cron.d.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(s.file)+".cron-gate-*")
	if err != nil {
		return "", fmt.Errorf("crontab %s: cannot create a temporary file: %s", safetext.QuotePath(s.file), safetext.Line(err.Error()))
	}
	fail := func(e error) (string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("crontab %s: %s; it is unchanged", safetext.QuotePath(s.file), safetext.Line(e.Error()))
	}
	if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		return fail(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(text); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if !s.unchanged(orig, &st) {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("crontab %s: %w", safetext.QuotePath(s.file), errChanged)
	}
	if err := os.Rename(tmp.Name(), s.file); err != nil {
		return fail(err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return backup, nil
}

// unchanged reports whether the file still holds orig, with the inode
// and times of st.
func (s *adoptSource) unchanged(orig []byte, st *unix.Stat_t) bool {
	var now unix.Stat_t
	if unix.Stat(s.file, &now) != nil || now.Ino != st.Ino || now.Dev != st.Dev || now.Mtim != st.Mtim || now.Ctim != st.Ctim {
		return false
	}
	data, err := os.ReadFile(s.file)
	return err == nil && bytes.Equal(data, orig)
}

// writeBackup writes data to prefix+TIME (prefix+TIME-2, -3... when that
// exists: never over an existing file), fsynced, with mode.
func writeBackup(prefix string, data []byte, mode fs.FileMode) (string, error) {
	base := prefix + time.Now().Format(adoptBackupLayout)
	for i := 1; i < 100; i++ {
		name := base
		if i > 1 {
			name += "-" + strconv.Itoa(i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backup %s: %s; nothing was changed", safetext.QuotePath(name), safetext.Line(err.Error()))
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(mode) // not the umask's
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("backup %s: %s; nothing was changed", safetext.QuotePath(name), safetext.Line(err.Error()))
		}
		return name, nil
	}
	return "", fmt.Errorf("backup %s: too many backups this second; nothing was changed", safetext.QuotePath(base))
}

// onPath reports whether PATH list holds an executable file named name.
func onPath(list, name string) bool {
	for _, dir := range filepath.SplitList(list) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// userExists is getpwnam for a system crontab's user field.
func userExists(name string) bool {
	_, err := user.Lookup(name)
	return err == nil
}
