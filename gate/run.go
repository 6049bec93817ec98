//go:build linux

package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/statefile"
)

// Invocation is one `cron-gate NAME -- COMMAND` call.
type Invocation struct {
	Gate      string
	Argv      []string
	Config    *Config // nil when ConfigErr is set
	ConfigErr error
	Timeout   time.Duration
	KillAfter time.Duration
	Out       Printer // messages for people (stderr); *safetext.Printer in the binaries
	Sigs      <-chan os.Signal
	Now       func() time.Time // nil: time.Now
	// Pauses are where the gate's command-line pauses live (Pauses.For):
	// the zero value is this host's only; cron-gate-etcd sets Shared.
	Pauses Pauses
	// Observer, if set, is asked for an observer of each run that gets as
	// far as starting the command (package hcping's healthchecks pings);
	// it may return nil. The run path itself links no network code.
	Observer func(g *GateConfig, run string, out Printer) RunObserver
	// OncePer, if set, is the run form's --once-per: it overrides the
	// gate's once_per (one of OncePers).
	OncePer string
	// Jitter, if positive, is the run form's --jitter: it overrides the
	// gate's jitter.
	Jitter time.Duration
	// Chronic is the run form's --chronic: the output is held as with
	// the gate's chronic.
	Chronic bool
	// Wait, if set, is called instead of sleeping the jitter offset (an
	// injected clock for tests).
	Wait func(time.Duration)
	// ManualBy, if set, makes this a manual run (cron-gate trigger, the
	// dashboard's "run now") by that person: recorded as trigger
	// "manual" with by; it does not wait its jitter. Force, for a manual
	// run only, skips the pause checks (this host's, the config's, the
	// shared one), and the journal says which pause it went past.
	ManualBy string
	Force    bool
	// Environ, Dir and Credential, if set, are the command's whole
	// environment, the directory it starts in (/ when it cannot be
	// entered) and the user it runs as (runner.Spec): cron-gate trigger
	// runs a config's command as the config's owner would under cron.
	Environ    []string
	Dir        string
	Credential *syscall.Credential
}

// Printer takes Run's messages for people: one line each, prefixed with
// the program's name, the way safetext.Printer writes them (the
// binaries pass a *safetext.Printer). Errorf and Warnf are never silenced;
// Skipf says why a command did not run and may be silenced (-q, or no
// terminal under cron); Hintf follows an error with what to do; Infof
// says what the run does, with -v only.
type Printer interface {
	Errorf(format string, args ...any)
	Hintf(format string, args ...any)
	Warnf(format string, args ...any)
	Skipf(format string, args ...any)
	Infof(format string, args ...any)
}

// RunObserver hears of one run: Started once the command has started,
// Finished with the end record (also when the command could not start),
// Skipped instead when the run was skipped: with its skip record, before
// the command (paused, legacy files, coordinator down; not a done
// period), or with its end record after Started (busy: the command
// exited with the skip code). sk is the gate's run of skips, this one
// included (nil: the journal cannot say); GateConfig.CountsAsSkipping
// judges it as the watchdog does. None may change the run's outcome;
// each must return in bounded time.
type RunObserver interface {
	Started()
	Finished(end journal.Record)
	Skipped(rec journal.Record, sk *Skipping)
}

// Run decides whether the command may run, runs it, and records what
// happened. It returns the exit code: the command's own; the gate's skip
// code when it did not run; 124-127 and 128+N as runner defines; 125 for
// cron-gate's own failures.
//
// Decisions, in order: an invalid gate name or an unusable config refuses
// (125) — a config that cannot be read never lets a paused job run; then
// this host's command-line pause, the config's pause, the shared pause
// (with [etcd]: a store that cannot be reached skips the run, unless
// on_coordinator_down = "run"); then once_per (a period already done skips
// with reason done, once.go); then legacy locks and pidfiles. Then the
// jitter's wait, holding nothing (jitter.go), after which a run that
// waited decides again (a pause made during the wait stops it), and the
// once_per period's claim on this host, checked again under it. Every
// outcome is recorded in the gate's journal; if the journal cannot be
// written the command still runs and the loss is reported on stderr
// (docs/cron-gate.md, "Unwritable state dir").
func Run(inv Invocation) int {
	if err := CheckName(inv.Gate); err != nil {
		inv.Out.Errorf("%v", err)
		return runner.ExitFailure
	}
	r := newRun(inv)
	if inv.ConfigErr != nil {
		return r.refuseConfig()
	}
	defer statefile.ShareDir(StateDirFor(r.cfg))()
	r.openState()
	if r.j != nil {
		defer r.j.Close()
	}
	defer func() {
		if r.release != nil {
			r.release()
		}
	}()
	if code, decided := r.decide(); decided {
		return code
	}
	if code, stop := r.wait(); stop {
		return code
	}
	if r.base.JitterMS > 0 {
		// The wait may have lasted up to an hour: a pause (or a legacy
		// worker) that came meanwhile must still stop the command.
		r.readLocal()
		if code, decided := r.decide(); decided {
			return code
		}
	}
	if code, decided := r.claimOnce(); decided {
		return code
	}
	if code, decided := r.claimShared(); decided {
		return code
	}
	return r.execute()
}

// run is one Run: what it was asked, what it found, where it records.
type run struct {
	inv    Invocation
	out    Printer
	now    func() time.Time
	id     string         // the run's ID, "20261129T090000.000000Z-PID"
	base   journal.Record // what every record of the run holds
	cfg    *Config        // nil when the config could not be used
	g      *GateConfig
	pauses Pauses // for cfg

	local    *Pause // this host's command-line pause, nil: none
	localErr error  // it could not be read: the run must not go on
	j        *journal.Journal
	note     string // how the run was allowed, for its start record

	called  time.Time   // when the run was called: its period's instant
	period  Period      // once_per's period of the run; zero: none
	release func()      // drops the period claim (decideOnce); nil: none held
	claim   PeriodClaim // the period's claim across hosts ([etcd]); nil: none
	lost    atomic.Bool // the claim's lease was lost while the command ran
	busy    *os.File    // the command's busy report (runner.NewBusyReport); nil: none
}

func newRun(inv Invocation) *run {
	r := &run{inv: inv, out: inv.Out, now: inv.Now, cfg: inv.Config}
	if r.now == nil {
		r.now = time.Now
	}
	r.called = r.now()
	r.id = newRunID(r.called)
	r.base = journal.Record{Run: r.id, Pid: os.Getpid(), PidStart: runner.StartTicks(os.Getpid()), Host: hostname()}
	if inv.ManualBy != "" {
		r.base.Trigger, r.base.By, r.base.Forced = journal.TriggerManual, inv.ManualBy, inv.Force
	}
	if r.cfg != nil {
		r.g = r.cfg.Gate(inv.Gate)
		r.pauses = inv.Pauses.For(r.cfg)
	}
	return r
}

// decide applies the pauses, once_per and the legacy files, in Run's order. decided
// is true when the command must not run; code is then the exit code.
func (r *run) decide() (code int, decided bool) {
	if r.localErr != nil {
		return r.fail(journal.ReasonState, r.localErr), true
	}
	if code, decided := r.checkJitter(); decided {
		return code, true
	}
	if p := PauseOf(r.g, r.local, r.now()); p != nil {
		if !r.forced() {
			return r.skip(journal.ReasonPaused, describePause(p)), true
		}
		r.forcedPast(describePause(p))
	}
	if code, decided := r.decideShared(); decided {
		return code, true
	}
	if code, decided := r.decideOnce(); decided {
		return code, true
	}
	return r.decideLegacy()
}

// decideShared applies the shared pause ([etcd]): one linearizable read.
// An unreachable store skips the run unless the config says "run": a gate
// paused on another host must not run because the cluster could not say
// so.
func (r *run) decideShared() (code int, decided bool) {
	if r.pauses.Shared == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Etcd.TimeoutOr())
	p, err := r.pauses.Shared.Get(ctx, r.inv.Gate)
	cancel()
	switch {
	case errors.Is(err, ErrCoordinatorDown) && r.cfg.Etcd.RunOnDown:
		r.note = fmt.Sprintf("shared pauses unknown (%v); run as if only this host's pauses existed (on_coordinator_down = \"run\")", err)
		r.out.Warnf("gate %s: %s", r.inv.Gate, r.note)
	case errors.Is(err, ErrCoordinatorDown):
		return r.skip(journal.ReasonCoordinatorDown, fmt.Sprintf("shared pauses unknown: %v", err)), true
	case err != nil:
		return r.fail(journal.ReasonState, fmt.Errorf("gate %s: shared pause: %w", r.inv.Gate, err)), true
	case p.Active(r.now()) && r.forced():
		r.forcedPast(describePause(p))
	case p.Active(r.now()):
		return r.skip(journal.ReasonPaused, describePause(p)), true
	}
	if w, ok := r.pauses.Shared.(PauseWarner); ok {
		if s := w.Warning(time.Second); s != "" {
			r.out.Warnf("gate %s: %s", r.inv.Gate, s)
			r.note = strings.TrimPrefix(r.note+"; "+s, "; ")
		}
	}
	return 0, false
}

// forced reports whether the run is a manual one told to go past pauses.
func (r *run) forced() bool { return r.inv.ManualBy != "" && r.inv.Force }

// forcedPast notes, for the start record, the pause a forced run went past.
func (r *run) forcedPast(pause string) {
	r.note = strings.TrimPrefix(r.note+"; forced past the pause: "+pause, "; ")
}

// legacyReason is the journal's reason for what CheckLegacy finds.
func legacyReason(k LegacyKind) string {
	if k == LegacyPidfileFile {
		return journal.ReasonLegacyPidfile
	}
	return journal.ReasonLegacyLock
}

// decideLegacy skips the run while a legacy lock or pidfile says an old
// worker still runs; one that cannot be checked refuses it.
func (r *run) decideLegacy() (code int, decided bool) {
	found, err := CheckLegacy(r.g.LegacyLocks, r.g.LegacyPidfiles)
	if err != nil {
		return r.fail(journal.ReasonConfig, fmt.Errorf("gate %s: %w", r.inv.Gate, err)), true
	}
	if found != nil {
		// The journal is world-readable: a holder's command line goes
		// in only where /proc shows it to everyone (Found.Recorded).
		rec := r.record(journal.EventSkip, journal.OutcomeSkipped, legacyReason(found.Kind), found.Recorded())
		r.recordHeldBy(&rec, legacyHolders(found))
		return r.skipSaying(rec, found.String()), true
	}
	return 0, false
}

// newRunID names a run: start time and PID, unique on one host.
func newRunID(t time.Time) string {
	return t.UTC().Format("20060102T150405.000000Z") + "-" + strconv.Itoa(os.Getpid())
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
