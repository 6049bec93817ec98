package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/legacy"
	"github.com/crongate/crongate/internal/procstat"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

// Invocation is one `cron-gate NAME -- COMMAND` call.
type Invocation struct {
	Gate      string
	Argv      []string
	Config    *Config // nil when ConfigErr is set
	ConfigErr error
	Timeout   time.Duration
	KillAfter time.Duration
	Out       *tui.Printer
	Sigs      <-chan os.Signal
	Now       func() time.Time // nil: time.Now
	// Observer, if set, is asked for an observer of each run that gets as
	// far as starting the command (package hcping's healthchecks pings);
	// it may return nil. The run path itself links no network code.
	Observer func(g *GateConfig, run string, out *tui.Printer) RunObserver
}

// RunObserver hears of one run: Started once the command has started,
// Finished with the end record (also when the command could not start).
// Neither may change the run's outcome; both must return in bounded time.
type RunObserver interface {
	Started()
	Finished(end journal.Record)
}

// Run decides whether the command may run, runs it, and records what
// happened. It returns the exit code: the command's own; the gate's skip
// code when it did not run; 124-127 and 128+N as runner defines; 125 for
// cron-gate's own failures.
//
// Decisions, in order: an invalid gate name or an unusable config refuses
// (125) — a config that cannot be read never lets a paused job run; then a
// pause (config or command line); then legacy locks and pidfiles. Every
// outcome is recorded in the gate's journal; if the journal cannot be
// written the command still runs and the loss is reported on stderr
// (README, "Unwritable state dir").
func Run(inv Invocation) int {
	now := inv.Now
	if now == nil {
		now = time.Now
	}
	out := inv.Out
	if err := CheckName(inv.Gate); err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	run := newRunID(now())
	base := journal.Record{Run: run, Pid: os.Getpid(), PidStart: procstat.StartTicks(os.Getpid()), Host: hostname()}

	if inv.ConfigErr != nil {
		out.Errorf("%v", inv.ConfigErr)
		out.Hintf("gate %s did not run; fix the config, then check it with: cron-gate status", inv.Gate)
		// Record it where the journal can be found without the config.
		if j, err := journal.Open(StateDirFor(nil), inv.Gate, 0); err == nil {
			rec := base
			rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = journal.EventError, now(), journal.OutcomeError, journal.ReasonConfig, inv.ConfigErr.Error()
			if err := j.Append(rec); err != nil {
				out.Warnf("journal of gate %s: %v; this failure is not recorded", inv.Gate, err)
			}
			j.Close()
		}
		return runner.ExitFailure
	}
	cfg := inv.Config
	g := cfg.Gate(inv.Gate)
	skipCode := cfg.SkipCodeFor(inv.Gate)
	stateDir := StateDirFor(cfg)
	history := g.History
	if history == 0 {
		history = cfg.History
	}

	// A state dir that another user could have made or redirected (the
	// /var/tmp fallback, a symlink planted in /tmp) is not this user's
	// state: a pause found there was not set by this user, so it is
	// neither obeyed nor allowed to stop the job, and nothing is written
	// there. The run goes on, as with an unwritable state dir, and says
	// so (openRunState).
	sd, jerr, pauses, perr := openRunState(stateDir, out.Warnf)
	var j *journal.Journal
	if sd != nil {
		sd.Close()
		j, jerr = journal.Open(stateDir, inv.Gate, history)
	}
	if jerr != nil {
		out.Warnf("journal of gate %s unavailable: %v; this run is not recorded", inv.Gate, jerr)
	} else {
		defer j.Close()
	}
	record := func(rec journal.Record) {
		if j == nil {
			return
		}
		if err := j.Append(rec); err != nil {
			out.Warnf("journal of gate %s: %v; the %s record of run %s is lost", inv.Gate, err, rec.Event, rec.Run)
		}
	}
	fail := func(reason string, err error) int {
		out.Errorf("%v", err)
		rec := base
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = journal.EventError, now(), journal.OutcomeError, reason, err.Error()
		record(rec)
		return runner.ExitFailure
	}
	skip := func(reason, detail string) int {
		out.Skipf("skipped gate %s: %s", inv.Gate, detail)
		rec := base
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = journal.EventSkip, now(), journal.OutcomeSkipped, reason, detail
		record(rec)
		return skipCode
	}

	if perr != nil {
		return fail(journal.ReasonState, perr)
	}
	if p := PauseOf(g, pauses, now()); p != nil {
		return skip(journal.ReasonPaused, describePause(p))
	}
	// Shared pauses (cron-gate-etcd): one linearizable read. An
	// unreachable cluster skips the run unless the config says "run":
	// a gate paused on another host must not run because the cluster
	// could not say so.
	note := "" // for the start record: how this run was allowed
	if cfg.Shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Etcd.TimeoutOr())
		p, err := cfg.Shared.Get(ctx, inv.Gate)
		cancel()
		switch {
		case errors.Is(err, ErrCoordinatorDown) && cfg.Etcd.RunOnDown:
			note = fmt.Sprintf("shared pauses unknown (%v); run as if only this host's pauses existed (on_coordinator_down = \"run\")", err)
			out.Warnf("gate %s: %s", inv.Gate, note)
		case errors.Is(err, ErrCoordinatorDown):
			return skip(journal.ReasonCoordinatorDown, fmt.Sprintf("shared pauses unknown: %v", err))
		case err != nil:
			return fail(journal.ReasonState, fmt.Errorf("gate %s: shared pause: %w", inv.Gate, err))
		case p.Active(now()):
			return skip(journal.ReasonPaused, describePause(p))
		}
	}
	found, err := legacy.Check(g.LegacyLocks, g.LegacyPidfiles)
	if err != nil {
		return fail(journal.ReasonConfig, fmt.Errorf("gate %s: %w", inv.Gate, err))
	}
	if found != nil {
		r := journal.ReasonLegacyLock
		if found.Kind == legacy.Pidfile {
			r = journal.ReasonLegacyPidfile
		}
		return skip(r, found.String())
	}

	spec := runner.Spec{Argv: inv.Argv, Timeout: inv.Timeout, KillAfter: inv.KillAfter,
		Env: []string{"CRON_GATE_NAME=" + inv.Gate, "CRON_GATE_RUN=" + run}}
	var olog *journal.OutputLog
	if g.LogOutput && j != nil {
		olog = journal.NewOutputLog(g.LogMaxBytes)
		spec.Stdout = olog.Tee(os.Stdout)
		spec.Stderr = olog.Tee(os.Stderr)
	}
	// Optional healthchecks.io pings (package hcping): none, and no cost,
	// unless the gate has a healthchecks_url; never more than ~2 s.
	var hc RunObserver
	if inv.Observer != nil {
		hc = inv.Observer(g, run, out)
	}
	child, err := runner.Prepare(spec)
	start := now()
	if err == nil {
		err = child.Start()
	}
	if err != nil {
		out.Errorf("gate %s: %v", inv.Gate, err)
		code := runner.ExitCode(err)
		rec := base
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = journal.EventEnd, now(), journal.OutcomeError, journal.ReasonStart, err.Error()
		rec.Exit, rec.Argv, rec.Started = &code, inv.Argv, start
		record(rec)
		if hc != nil {
			hc.Finished(rec)
		}
		return code
	}
	if hc != nil {
		hc.Started()
	}
	rec := base
	rec.Event, rec.Time, rec.ChildPid, rec.Argv, rec.Detail = journal.EventStart, start, child.Pid(), inv.Argv, note
	rec.ChildStart = procstat.StartTicks(child.Pid())
	record(rec)

	// The run ends when the command does (runner.Child.Wait): the end
	// record gets the command's own end time and outcome, and is written
	// at once; the output that processes it left behind may keep open is
	// drained afterwards, for a bounded time (Child.Drain).
	res := child.Wait(inv.Sigs, start)
	end := now().Add(-time.Since(res.End))
	rec = base
	rec.Event, rec.Time, rec.Started, rec.ChildPid = journal.EventEnd, end, start, res.Pid
	rec.DurationMS = end.Sub(start).Milliseconds()
	code := res.Code
	rec.Exit = &code
	switch {
	case res.TimedOut:
		rec.Outcome, rec.Detail = journal.OutcomeTimeout, fmt.Sprintf("ran past %v", inv.Timeout)
		out.Errorf("gate %s: command timed out after %v", inv.Gate, inv.Timeout)
	case res.Signal != 0:
		rec.Outcome, rec.Signal = journal.OutcomeSignal, signalName(res.Signal)
	case code == 0:
		rec.Outcome = journal.OutcomeSuccess
	case code == skipCode:
		rec.Outcome, rec.Reason, rec.Detail = journal.OutcomeSkipped, journal.ReasonBusy, fmt.Sprintf("the command exited with the skip code %d", code)
	default:
		rec.Outcome = journal.OutcomeFailure
	}
	record(rec)
	if hc != nil {
		hc.Finished(rec)
	}
	if olog != nil {
		note := ""
		if child.Drain() {
			note = journal.CutNote(runner.DefaultDrain)
		}
		olog.End(note)
		if err := olog.Save(j, rec); err != nil {
			out.Warnf("output log of gate %s: %v; the output of run %s is not kept", inv.Gate, err, run)
		}
	}
	return code
}

func describePause(p *Pause) string {
	s := "paused by " + p.By
	if p.Who != "" {
		s += " (" + p.Who + ")"
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if !p.Until.IsZero() {
		s += ", until " + p.Until.Format(time.RFC3339)
	}
	return s
}

func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

// newRunID names a run: start time and PID, unique on one host.
func newRunID(t time.Time) string {
	return t.UTC().Format("20060102T150405.000000Z") + "-" + strconv.Itoa(os.Getpid())
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// Who names the user and host that runs a pause or resume, for the status.
func Who() string {
	name := os.Getenv("SUDO_USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		} else {
			name = "uid " + strconv.Itoa(os.Getuid())
		}
	}
	return name + "@" + hostname()
}
