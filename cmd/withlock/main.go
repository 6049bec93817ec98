// Command withlock runs a command while holding per-path flock locks that
// are byte-compatible with the user's Python workers, plus concurrency
// slots, all or nothing. See README.md for the contract.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/lockset"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	sigs := runner.Notify()
	out := &tui.Printer{Prog: "withlock"}

	o, err := parse(args, os.Stdout, os.Exit)
	if err != nil {
		out.Errorf("%v", err)
		out.Hintf("see withlock --help")
		return runner.ExitFailure
	}
	out.Quiet, out.Verbose = o.Quiet, o.Verbose

	req, err := o.request()
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}

	// Resolve the command before taking any lock: "not found" needs none.
	spec := runner.Spec{Argv: o.Command, Timeout: o.Timeout, KillAfter: o.KillAfter}
	if _, err := runner.Prepare(spec); err != nil {
		out.Errorf("%v", err)
		return runner.ExitCode(err)
	}

	claim, err := lockset.Local{LockDir: o.LockDir}.Open(req)
	if err != nil {
		out.Errorf("%v", err)
		if errors.Is(err, lockfile.ErrUnsafe) {
			out.Hintf("lock files and dirs are never followed through symlinks or shared with other users; see README, Permissions")
		}
		return runner.ExitFailure
	}
	defer claim.Close()

	held, sig, err := acquire(claim, o.Wait, sigs)
	if sig != 0 {
		return runner.ExitSignalBase + sig
	}
	if err != nil {
		var be *lockfile.BusyError
		if errors.As(err, &be) {
			if !o.Quiet {
				be.FindHolders()
				out.Skipf("skipped %s: %v", quoteArgs(o.Command), be)
			}
			return o.SkipCode
		}
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	defer held.Release()

	paths, _ := json.Marshal(held.Paths())
	slotIdx := make([]string, len(held.Slots()))
	for i, s := range held.Slots() {
		slotIdx[i] = strconv.Itoa(s)
	}
	spec.Env = []string{"WITHLOCK_PATHS=" + string(paths), "WITHLOCK_SLOT=" + strings.Join(slotIdx, ",")}
	// The command inherits the lock descriptors: the locks live as long as
	// the command does, even if withlock itself is killed (README, Lock
	// lifetime).
	spec.ExtraFiles = held.Files()
	out.Infof("holding %d path lock(s) in %s, slot(s) %s", len(held.Paths()), o.LockDir, strings.Join(slotIdx, ","))

	child, err := runner.Prepare(spec)
	if err == nil {
		start := time.Now()
		if err = child.Start(); err == nil {
			res := child.Wait(sigs, start)
			if res.TimedOut {
				out.Errorf("%s timed out after %v", quoteArgs(o.Command), o.Timeout)
			}
			return res.Code
		}
	}
	out.Errorf("%v", err)
	return runner.ExitCode(err)
}

// acquire takes the claim, waiting up to wait. A forwarded signal arriving
// meanwhile stops the wait: the command never starts and withlock exits
// 128+N, as if it had died of it.
func acquire(c lockset.Claim, wait time.Duration, sigs chan os.Signal) (lockset.Held, int, error) {
	if wait <= 0 {
		h, err := lockset.Acquire(context.Background(), c, 0)
		return h, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			got <- int(s.(syscall.Signal))
			cancel()
		case <-stop:
		}
	}()
	h, err := lockset.Acquire(ctx, c, wait)
	close(stop)
	cancel()
	select {
	case s := <-got:
		if h != nil {
			h.Release()
		}
		return nil, s, nil
	default:
	}
	return h, 0, err
}

// request builds the lock request from the options.
func (o *options) request() (lockset.Request, error) {
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
