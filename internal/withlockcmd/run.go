// Package withlockcmd is the withlock command: its options, the fast
// parser, and Run. Two binaries share it: withlock, the one cron runs on
// every tick, which parses the common command lines itself and links no
// CLI library, and withlock-full, which parses with kong (help, errors,
// every other form). withlock hands a line it does not parse to
// withlock-full unchanged; see README, "Start-up cost".
package withlockcmd

import (
	"bufio"
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

// readPaths reads one path per line (or per NUL with -0); empty lines are
// skipped and only the line terminator is removed.
func readPaths(name string, null bool) ([]string, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--paths-from: %w", err)
		}
		defer f.Close()
		r = f
	}
	sep := byte('\n')
	if null {
		sep = 0
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, sep); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var paths []string
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			paths = append(paths, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--paths-from %s: %w", name, err)
	}
	return paths, nil
}
