//go:build linux

// Command withlock-etcd is withlock's etcd backend: the same command line
// and the same guarantees as withlock, with the locks held as keys in an
// etcd cluster so that several hosts exclude each other. withlock execs it
// for --backend etcd (or WITHLOCK_BACKEND=etcd); it is a binary of its own so
// that the local withlock never links the etcd client. See README, "Across
// hosts (etcd)".
package main

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/etcdlock"
	wc "github.com/crongate/crongate/internal/withlockcmd"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

// ExitLost is the exit code when the lease was lost while the command ran:
// withlock-etcd stopped it, because another host may now hold its locks.
// 70 is free in withlock's table (75 skip, 124-127, 128+N) and is
// sysexits' EX_SOFTWARE, "internal software error": the run cannot be
// trusted and should be retried.
const ExitLost = 70

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	sigs := runner.Notify()
	out := &tui.Printer{Prog: "withlock-etcd"}

	o, err := parse(args, os.Stdout, os.Exit)
	if err != nil {
		out.Errorf("%v", err)
		out.Hintf("see withlock --backend etcd --help")
		return runner.ExitFailure
	}
	out.Quiet, out.Verbose = o.Quiet, o.Verbose

	req, err := o.Request()
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

	host := etcdlock.Hostname()
	b, err := etcdlock.New(etcdlock.Config{
		Endpoints: o.Endpoints,
		KeyRoot:   o.KeyRoot,
		Prefix:    o.KeyPrefix,
		TTL:       o.TTL,
		Holder:    etcdlock.Holder{Host: host, PID: os.Getpid(), Cmd: truncate(wc.QuoteArgs(o.Command), 200)},
	})
	if err != nil {
		return down(out, o, err)
	}
	defer b.Close()
	claim, err := b.Open(req)
	if err != nil {
		out.Errorf("%v", err)
		if errors.Is(err, etcdlock.ErrOutsideRoot) {
			out.Hintf("every path must be under --key-root (%s here), which names the shared tree on this host", b.Root())
		}
		return runner.ExitFailure
	}
	defer claim.Close()

	// A signal before the command starts ends withlock-etcd at once
	// with 128+N (runner.Notify's guard); locks taken by then expire with
	// the lease, as after a SIGKILL (README, Signals).
	held, err := wc.Acquire(claim, o.Wait)
	if n := b.Rereads.Load(); n > 0 {
		out.Infof("%d lock transaction(s) timed out and were read back to learn their outcome", n)
	}
	if err != nil {
		var be *etcdlock.BusyError
		if errors.As(err, &be) {
			out.Skipf("skipped %s: %v", wc.QuoteArgs(o.Command), be)
			return o.SkipCode
		}
		return down(out, o, err)
	}
	defer func() {
		held.Release()
		if f, ok := held.(etcdlock.Fenced); ok && f.ReleaseErr() != nil {
			out.Warnf("could not release the locks (%v); they expire with the lease, within %v", f.ReleaseErr(), o.TTL)
		}
	}()
	f := held.(etcdlock.Fenced)

	env, pathsFile, err := wc.PathsEnv(held.Paths(), 3)
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	if pathsFile != nil {
		defer pathsFile.Close()
		spec.ExtraFiles = append(spec.ExtraFiles, pathsFile)
	}
	slotIdx := make([]string, len(held.Slots()))
	for i, s := range held.Slots() {
		slotIdx[i] = strconv.Itoa(s)
	}
	env = append(env,
		"WITHLOCK_SLOT="+strings.Join(slotIdx, ","),
		"WITHLOCK_FENCE_LEASE="+strconv.FormatInt(f.Lease(), 16),
		"WITHLOCK_FENCE_REVISION="+strconv.FormatInt(f.Revision(), 10),
	)
	if rel := wc.JSONPaths(f.RelPaths()); len(rel) <= wc.MaxEnvPaths {
		env = append(env, "WITHLOCK_KEY_PATHS="+string(rel))
	}
	spec.Env = env
	out.Infof("holding %d path(s) under %s and slot(s) %s in etcd (lease %x, revision %d)",
		len(held.Paths()), b.Root(), strings.Join(slotIdx, ","), f.Lease(), f.Revision())

	// The locks cannot be inherited: if withlock-etcd dies, its lease
	// expires within the TTL and another host may take them. So the
	// command is started with a parent-death signal (setpriv --pdeathsig
	// KILL): the kernel kills it the moment withlock-etcd dies. The signal
	// fires when the forking thread exits, so this goroutine stays locked
	// to its thread for good (go.dev/issue/27505).
	runtime.LockOSThread()
	if sp := setpriv(); sp != "" {
		spec.Argv = append([]string{sp, "--pdeathsig", "KILL", "--"}, o.Command...)
	} else {
		out.Warnf("setpriv (util-linux) not found: the command would outlive withlock-etcd if it were killed")
	}
	child, err := runner.Prepare(spec)
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitCode(err)
	}
	select {
	case <-held.Lost():
		out.Errorf("lost the etcd lease before starting %s: %s", wc.QuoteArgs(o.Command), f.LostReason())
		return down(out, o, etcdlock.ErrUnavailable)
	default:
	}
	start := time.Now()
	if err := child.Start(); err != nil {
		out.Errorf("%v", err)
		return runner.ExitCode(err)
	}

	// Signals for the command: the forwarded ones, and TERM then KILL if
	// the lease is lost.
	csigs := make(chan os.Signal, 8)
	stop := make(chan struct{})
	var lost atomic.Bool
	go func() {
		var kill <-chan time.Time
		lostc := held.Lost()
		for {
			select {
			case s := <-sigs:
				csigs <- s
			case <-lostc:
				lostc = nil
				lost.Store(true)
				// KILL at the latest just before the lease can expire
				// on the cluster, or after --kill-after if sooner.
				at := time.Until(f.KillBy())
				if o.KillAfter < at {
					at = o.KillAfter
				}
				out.Errorf("lost the etcd lease: %s; stopping %s (TERM now, KILL in %v)", f.LostReason(), wc.QuoteArgs(o.Command), max(at, 0).Round(time.Millisecond))
				csigs <- unix.SIGTERM
				kill = time.After(max(at, 0))
			case <-kill:
				kill = nil
				csigs <- unix.SIGKILL
			case <-stop:
				return
			}
		}
	}()
	res := child.Wait(csigs, start)
	close(stop)
	if lost.Load() {
		return ExitLost
	}
	if res.TimedOut {
		out.Errorf("%s timed out after %v", wc.QuoteArgs(o.Command), o.Timeout)
	}
	return res.Code
}

// down reports that the cluster could not be used: skip or fail, as
// --on-coordinator-down says. The command has not run.
func down(out *tui.Printer, o *options, err error) int {
	if errors.Is(err, etcdlock.ErrUnavailable) && o.OnCoordinatorDown == "skip" {
		out.Skipf("skipped %s: %v", wc.QuoteArgs(o.Command), err)
		return o.SkipCode
	}
	out.Errorf("%v", err)
	if errors.Is(err, etcdlock.ErrUnavailable) {
		out.Hintf("the command did not run; --on-coordinator-down skip exits with the skip code instead")
	}
	return runner.ExitFailure
}

// setpriv finds util-linux's setpriv (cron may give no PATH).
func setpriv() string {
	if p, err := exec.LookPath("setpriv"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/setpriv", "/bin/setpriv"} {
		if unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
