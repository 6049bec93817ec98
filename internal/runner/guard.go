//go:build linux

package runner

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/earlyquit"
)

// Signals before the command starts.
//
// A wrapper spends most of its life before the command in calls that can
// block for as long as the outside world likes: reading --paths-from from a
// pipe that never ends, waiting for locks, a slow etcd call, a journal lock
// another process holds. A signal received then must end it, promptly and
// with the code a shell gives a process killed by that signal (128+N), not
// be queued until the command starts and then forwarded to it.
//
// So Notify arms a guard: one goroutine that receives the forwarded
// signals and, while armed, exits the process at once with 128+N. Nothing
// is printed (the process behaves as if it had died of the signal, which is
// what a supervisor asked for) and no deferred function runs: whatever the
// wrapper holds is released as after a SIGKILL — flock locks by the kernel
// when the descriptors close — and a state file being written is left as a
// SIGKILL would leave it, which every state write already survives (temp
// file and rename, one-line appends). The one exception is what OnAbort
// registers: the etcd backend's leases, whose keys would otherwise stay for
// a whole TTL (a waiter's place in the queue, keeping later jobs out),
// are revoked first, within a bound.
//
// The guard is disarmed, atomically with respect to the signals, in three
// ways, so that every signal is acted on exactly once:
//   - Child.Start disarms it under the guard's lock, in the same critical
//     section as the fork: a signal is either handled by the guard before
//     the command exists, or delivered on the channel afterwards, where
//     Child.Wait forwards it to the command's group (the behaviour once the
//     command runs is unchanged);
//   - Disarm, for subcommands that handle signals themselves (cron-gate
//     serve stops gracefully, cron-gate check saves what it delivered):
//     from then on signals arrive on the channel;
//   - HandOff, just before an exec to a companion binary: it stops the
//     guard and returns a signal that was caught but not yet acted on, so
//     that the caller exits 128+N instead of exec'ing.

// guard is the state Notify creates; see the comment above.
type guard struct {
	mu    sync.Mutex
	armed bool
	ended bool           // a command started (disarming the guard) has ended
	raw   chan os.Signal // from signal.Notify
	out   chan os.Signal // what Notify returned
	done  chan struct{}  // closed when loop returns
}

var (
	guardMu sync.Mutex
	current *guard
)

// Notify starts catching the forwarded signals, arms the guard (see above)
// and returns the channel on which signals arrive once the guard is
// disarmed. Call it first thing in main: until then the Go runtime's
// default action applies (SIGQUIT would print a goroutine dump). Calling it
// again before HandOff returns the same channel.
func Notify() chan os.Signal {
	guardMu.Lock()
	defer guardMu.Unlock()
	if current != nil {
		return current.out
	}
	g := &guard{
		armed: true,
		raw:   make(chan os.Signal, 8),
		out:   make(chan os.Signal, 8),
		done:  make(chan struct{}),
	}
	signal.Notify(g.raw, caught()...)
	// QUIT had the kernel's default action until now (earlyquit); the
	// runtime's handler back, Notify's catches it.
	earlyquit.Restore()
	go g.loop()
	current = g
	return g.out
}

// caught returns the forwarded signals that this process does not ignore.
// A signal the caller ignored — nohup's HUP, a shell's `trap "" INT` —
// stays ignored, by this process and by the command it starts (which
// inherits the disposition): catching it would turn it back on. The Go
// runtime keeps an inherited SIG_IGN for HUP and INT only; an ignored TERM
// or QUIT it has replaced with its own handler before main runs, so those
// cannot be told ignored, and are caught as usual.
func caught() []os.Signal {
	var sigs []os.Signal
	for _, s := range Forwarded {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

func (g *guard) loop() {
	defer close(g.done)
	for s := range g.raw {
		g.mu.Lock()
		if g.armed {
			// Ends the process: the lock is never released, so nothing
			// else can start the command meanwhile.
			// abortMu stays held to the end: Exit, which the rest
			// of the program exits through, waits for this exit.
			abortMu.Lock()
			if abort != nil {
				// The rest of the program may fail on what the abort
				// undoes (a revoked lease) while it runs: it says
				// nothing then (stderr goes to /dev/null), and its exit
				// waits (Exit); this one is 128+N, silently.
				if null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
					unix.Dup3(null, 2, 0)
				}
				abort()
			}
			os.Exit(SignalCode(s))
		}
		// As signal.Notify does: a full channel drops the signal rather
		// than block the delivery of the next ones.
		select {
		case g.out <- s:
		default:
		}
		g.mu.Unlock()
	}
}

var (
	abortMu sync.Mutex
	abort   func()
)

// OnAbort registers f, run by the guard when a signal ends the process
// before the command has started, just before it exits; f replaces any
// earlier one, and nil removes it. f runs while the rest of the program
// may still be running, and must end promptly on its own (the etcd
// backend gives its revokes a fixed bound): the process exits only after.
// Meanwhile stderr goes to /dev/null and Exit waits, so that the rest of
// the program, failing on what f undoes, neither speaks nor exits first:
// a program that registers f exits through Exit.
func OnAbort(f func()) {
	abortMu.Lock()
	abort = f
	abortMu.Unlock()
}

// exitWaiting counts Exit calls that have reached abortMu (for tests).
var exitWaiting atomic.Int32

// Exit exits with code, as os.Exit, unless the guard is ending the
// process after a signal (OnAbort's function running): then it waits for
// that exit, 128+N, which wins. A main whose run path registers OnAbort
// exits through it.
func Exit(code int) {
	exitWaiting.Add(1)
	abortMu.Lock()
	os.Exit(code)
}

// SignalCode is the exit code for a process ended by s: 128+N, or
// ExitFailure for a signal that is not a syscall.Signal.
func SignalCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return ExitSignalBase + int(n)
	}
	return ExitFailure
}

// Disarm hands the forwarded signals to Notify's channel from now on,
// instead of ending the process: for a caller that handles them itself
// (cron-gate serve, cron-gate check). It does nothing before Notify.
func Disarm() {
	guardMu.Lock()
	g := current
	guardMu.Unlock()
	if g != nil {
		g.mu.Lock()
		g.armed = false
		g.mu.Unlock()
	}
}

// Waiting re-arms the guard for a bounded wait on a state lock (package
// statefile) made after the command has ended — the journal's end
// record, its output — so that TERM, INT or HUP received meanwhile ends
// the process with 128+N as before the command, instead of being
// forwarded to a command that is gone. done restores the guard as it
// was. Waiting changes nothing before Notify, while the guard is armed
// anyway, while a command runs (its signals are forwarded to it), or
// after Disarm (cron-gate check and serve handle signals themselves).
func Waiting() (done func()) {
	guardMu.Lock()
	g := current
	guardMu.Unlock()
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed || !g.ended {
		return func() {}
	}
	g.armed = true
	return func() {
		g.mu.Lock()
		g.armed = false
		g.mu.Unlock()
	}
}

// commandEnded records that the command started by Child.Start has ended
// (Child.Wait returned): Waiting may re-arm the guard from now on.
func commandEnded() {
	guardMu.Lock()
	g := current
	guardMu.Unlock()
	if g != nil {
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
	}
}

// startDisarming runs start (the fork and exec of the command) under the
// guard's lock and disarms the guard if it succeeded: see the package
// comment on signals before the command starts.
func startDisarming(start func() error) error {
	guardMu.Lock()
	g := current
	guardMu.Unlock()
	if g == nil {
		return start()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	err := start()
	if err == nil {
		g.armed, g.ended = false, false
	}
	return err
}

// HandOff is called just before this process execs another binary that
// will run the command (cron-gate → cron-gate-etcd;
// withlock execs withlock-etcd before Notify, and needs none). It stops the guard and
// returns the forwarded signals to their default action, so one that
// arrives from now on ends this process (killed by it) before any command
// has started; QUIT gets the kernel's default action, not the Go runtime's
// (which would print a goroutine dump). A signal that arrived already is
// acted on: while the guard was armed it ends the process here with 128+N;
// one caught on c (after Disarm) is returned, and the caller exits 128+N
// instead of exec'ing, since an exec would drop it and the next binary
// would run the command as if nothing had been asked. After HandOff the
// process must exec or exit.
func HandOff(c chan os.Signal) (code int, stop bool) {
	guardMu.Lock()
	g := current
	current = nil
	guardMu.Unlock()
	setDefaultAction(unix.SIGQUIT)
	if g != nil {
		// After Stop, nothing more is sent to g.raw; closing it lets the
		// guard act on what is already there and return.
		signal.Stop(g.raw)
		close(g.raw)
		<-g.done
	}
	signal.Reset(Forwarded...)
	select {
	case s := <-c:
		return SignalCode(s), true
	default:
		return 0, false
	}
}

// setDefaultAction sets sig's disposition to SIG_DFL in the kernel,
// behind the Go runtime's back (which would keep its own handler, and for
// SIGQUIT print a goroutine dump). The kernel's struct sigaction with
// SIG_DFL, no flags and an empty mask is all zeros on every Linux
// architecture; 32 bytes cover the largest layout, and 8 is the kernel's
// sigset size. On failure the runtime's handler stays: nothing worse than
// before.
func setDefaultAction(sig unix.Signal) {
	var act [4]uint64
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
}
