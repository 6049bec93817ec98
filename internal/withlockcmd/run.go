//go:build linux

// Package withlockcmd is the withlock command: its options, the fast
// parser, and Run. Two binaries share it: withlock, the one cron runs on
// every tick, which parses the common command lines itself and links no
// CLI library, and withlock-full, which parses with kong (help, errors,
// every other form). withlock hands a line it does not parse to
// withlock-full unchanged; see README, "Start-up cost".
package withlockcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/buildinfo"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/sibling"
	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/lockset"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

// FullBinary is the name of the binary with the full parser.
const FullBinary = "withlock-full"

// Main is withlock's main: the fast parser, or withlock-full.
func Main(args []string) int {
	sigs := runner.Notify()
	flagArgs, command, found := SplitCommand(args)
	var o Options
	if !FastParse(flagArgs, &o.CLI) {
		if code, stop := runner.HandOff(sigs); stop {
			return code
		}
		return execFull(args)
	}
	o.Command = command
	if err := o.Validate(found); err != nil {
		out := &tui.Printer{Prog: "withlock"}
		out.Errorf("%v", err)
		out.Hintf("see withlock --help")
		return runner.ExitFailure
	}
	return Run(&o, sigs)
}

// execFull replaces this process with withlock-full, found next to this
// executable or on PATH, with the same arguments.
func execFull(args []string) int {
	out := &tui.Printer{Prog: "withlock"}
	err := sibling.Exec(FullBinary, "withlock", args)
	if errors.Is(err, sibling.ErrNotFound) {
		if len(args) == 1 && (args[0] == "--version") {
			fmt.Println(buildinfo.String())
			return 0
		}
		out.Errorf("this command line needs %s, the full parser (help, errors, rare forms), which is not installed next to withlock or on PATH", FullBinary)
		out.Hintf("install both: CGO_ENABLED=0 go install ./cmd/...")
		return runner.ExitFailure
	}
	out.Errorf("%v", err)
	return runner.ExitFailure
}

// Run runs withlock with parsed options. sigs is runner.Notify's channel:
// until the command starts, runner's guard ends withlock on a signal with
// 128+N (whatever stage it is in: reading --paths-from, waiting for
// locks); from then on the signals arrive on sigs and are forwarded to the
// command's process group.
func Run(o *Options, sigs chan os.Signal) int {
	out := &tui.Printer{Prog: "withlock", Quiet: o.Quiet, Verbose: o.Verbose}
	if o.Version {
		fmt.Println(buildinfo.String())
		return 0
	}

	req, err := o.Request()
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}

	// Resolve the command before taking any lock: "not found" needs none.
	child, err := runner.Prepare(runner.Spec{Argv: o.Command, Timeout: o.Timeout, KillAfter: o.KillAfter})
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitCode(err)
	}

	claim, err := lockset.Local{LockDir: o.LockDir}.Open(req)
	if err != nil {
		return failure(out, err)
	}
	defer claim.Close()

	held, err := Acquire(claim, o.Wait)
	if err != nil {
		var be *lockfile.BusyError
		if errors.As(err, &be) {
			if !o.Quiet {
				be.FindHolders()
				out.Skipf("skipped %s: %v", QuoteArgs(o.Command), be)
			}
			return o.SkipCode
		}
		return failure(out, err)
	}
	defer held.Release()

	// The command inherits the lock descriptors: the locks live as long as
	// the command does, even if withlock itself is killed (README, Lock
	// lifetime).
	child.AddFiles(held.Files()...)
	env, pathsFile, err := PathsEnv(held.Paths(), 3+len(child.Files()))
	if err != nil {
		return failure(out, err)
	}
	if pathsFile != nil {
		defer pathsFile.Close()
		child.AddFiles(pathsFile)
	}
	slotIdx := make([]string, len(held.Slots()))
	for i, s := range held.Slots() {
		slotIdx[i] = strconv.Itoa(s)
	}
	child.AddEnv(append(env, "WITHLOCK_SLOT="+strings.Join(slotIdx, ","))...)
	out.Infof("holding %d path lock(s) in %s, slot(s) %s", len(held.Paths()), o.LockDir, strings.Join(slotIdx, ","))

	start := time.Now()
	if err = child.Start(); err == nil {
		res := child.Wait(sigs, start)
		if res.TimedOut {
			out.Errorf("%s timed out after %v", QuoteArgs(o.Command), o.Timeout)
		}
		return res.Code
	}
	out.Errorf("%v", err)
	return runner.ExitCode(err)
}

// failure reports withlock's own failure (exit 125), with a hint where a
// lock dir or file was refused for safety.
func failure(out *tui.Printer, err error) int {
	out.Errorf("%v", err)
	if errors.Is(err, lockfile.ErrUnsafe) {
		out.Hintf("withlock never follows a symlink or uses another user's lock dir; see README, Permissions")
	}
	return runner.ExitFailure
}

// Acquire takes the claim, waiting up to wait. Signals are not its
// concern: until the command starts, runner's guard (runner.Notify) ends
// withlock at once with 128+N, during --wait too (nothing is held then),
// and the command never starts.
func Acquire(c lockset.Claim, wait time.Duration) (lockset.Held, error) {
	return lockset.Acquire(context.Background(), c, wait)
}

// Request builds the lock request from the options.
func (o *Options) Request() (lockset.Request, error) {
	r := lockset.Request{Paths: o.Paths}
	if o.PathsFrom != "" {
		more, err := readPaths(o.PathsFrom, o.Null)
		if err != nil {
			return r, err
		}
		r.Paths = append(r.Paths, more...)
	}
	for i, n := range o.Slots {
		t := filepath.Join(o.LockDir, lockset.DefaultSlotTemplate)
		if i < len(o.SlotFile) {
			t = o.SlotFile[i]
		}
		r.Pools = append(r.Pools, lockset.PoolSpec{Size: n, Template: t})
	}
	if len(r.Paths) == 0 && len(r.Pools) == 0 {
		return r, fmt.Errorf("nothing to lock: %s holds no paths", o.PathsFrom)
	}
	return r, nil
}

// Limits of --paths-from (README, withlock). They bound the time and
// memory a list can cost, whatever is named: /dev/zero, an endless pipe.
const (
	// MaxPathsFromBytes bounds what is read, duplicates included.
	MaxPathsFromBytes = 128 << 20
	// MaxPathsFromEntries bounds the distinct entries kept (exact
	// duplicates are dropped as they are read; a set is further bounded
	// by the open-file limit once canonicalised).
	MaxPathsFromEntries = 1 << 20
	// MaxEntryBytes is the longest entry. A spelling may be longer than
	// PATH_MAX and still name a lock (Python resolves it as text: README,
	// Python compatibility), so the bound is far above it.
	MaxEntryBytes = 1 << 20
)

// readPaths reads one path per line (or per NUL with -0) from the file
// name, or stdin for "-"; empty entries are skipped and only the
// terminator is removed. The file must be a regular file or a pipe
// (safeopen.OpenStream: never a device, and opening it never blocks).
func readPaths(name string, null bool) ([]string, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := safeopen.OpenStream(name)
		if err != nil {
			if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
				return nil, fmt.Errorf("--paths-from: %s is %s; give a regular file, a pipe, or - for stdin", name, fe.Kind)
			}
			return nil, fmt.Errorf("--paths-from: %s: %w", name, safeopen.Cause(err))
		}
		defer f.Close()
		r = f
	}
	return scanPaths(r, name, null)
}

// scanPaths reads the entries of r as readPaths says, checking each as it
// is read: a NUL in a line (no path holds one) or an entry longer than
// MaxEntryBytes is refused at once, and reading stops with an error past
// MaxPathsFromBytes or MaxPathsFromEntries.
func scanPaths(r io.Reader, name string, null bool) ([]string, error) {
	sep, unit := byte('\n'), "line"
	if null {
		sep, unit = 0, "entry"
	}
	if name == "-" {
		name = "- (stdin)"
	}
	seen := map[string]struct{}{}
	var paths []string
	var cur []byte // the entry being read
	n := 1         // its number
	var total int64
	add := func() error {
		if _, dup := seen[string(cur)]; len(cur) > 0 && !dup {
			if len(paths) == MaxPathsFromEntries {
				return fmt.Errorf("--paths-from %s: more than %d distinct paths; split the list", name, MaxPathsFromEntries)
			}
			s := string(cur)
			seen[s] = struct{}{}
			paths = append(paths, s)
		}
		cur = cur[:0]
		n++
		return nil
	}
	buf := make([]byte, 64<<10)
	for {
		got, err := r.Read(buf)
		total += int64(got)
		if total > MaxPathsFromBytes {
			return nil, fmt.Errorf("--paths-from %s: more than %s; split the list", name, safeopen.Size(MaxPathsFromBytes))
		}
		data := buf[:got]
		if !null {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return nil, fmt.Errorf("--paths-from %s: line %d holds a NUL byte, which no path can (a NUL-separated list needs -0)",
					name, n+bytes.Count(data[:i], []byte{sep}))
			}
		}
		for len(data) > 0 {
			if len(cur) == 0 && data[0] == sep {
				// A run of empty entries (-0 on /dev/zero): skipped
				// whole, not one call per byte.
				j := 1
				for j < len(data) && data[j] == sep {
					j++
				}
				n += j
				data = data[j:]
				continue
			}
			i := bytes.IndexByte(data, sep)
			piece := data
			if i >= 0 {
				piece, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if len(cur)+len(piece) > MaxEntryBytes {
				return nil, fmt.Errorf("--paths-from %s: %s %d is longer than %s", name, unit, n, safeopen.Size(MaxEntryBytes))
			}
			cur = append(cur, piece...)
			if i >= 0 {
				if err := add(); err != nil {
					return nil, err
				}
			}
		}
		switch {
		case err == io.EOF:
			if err := add(); err != nil {
				return nil, err
			}
			return paths, nil
		case err != nil:
			return nil, fmt.Errorf("--paths-from %s: %w", name, err)
		}
	}
}
