//go:build linux

package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
	Finished(end Record)
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
	base := Record{Run: run, Pid: os.Getpid(), PidStart: processStartTicks(os.Getpid()), Host: hostname()}

	if inv.ConfigErr != nil {
		out.Errorf("%v", inv.ConfigErr)
		out.Hintf("gate %s did not run; fix the config, then check it with: cron-gate status", inv.Gate)
		// Record it where the journal can be found without the config.
		if j, err := OpenJournal(StateDirFor(nil), inv.Gate, 0); err == nil {
			rec := base
			rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = EventError, now(), OutcomeError, ReasonConfig, inv.ConfigErr.Error()
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
	var j *Journal
	if sd != nil {
		j, jerr = openJournalIn(sd, inv.Gate, history)
		sd.Close()
	}
	if jerr != nil {
		out.Warnf("journal of gate %s unavailable: %v; this run is not recorded", inv.Gate, jerr)
	} else {
		defer j.Close()
	}
	record := func(rec Record) {
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
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = EventError, now(), OutcomeError, reason, err.Error()
		record(rec)
		return runner.ExitFailure
	}
	skip := func(reason, detail string) int {
		out.Skipf("skipped gate %s: %s", inv.Gate, detail)
		rec := base
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = EventSkip, now(), OutcomeSkipped, reason, detail
		record(rec)
		return skipCode
	}

	if perr != nil {
		return fail(ReasonState, perr)
	}
	if p := PauseOf(g, pauses, now()); p != nil {
		return skip(ReasonPaused, describePause(p))
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
			return skip(ReasonCoordinatorDown, fmt.Sprintf("shared pauses unknown: %v", err))
		case err != nil:
			return fail(ReasonState, fmt.Errorf("gate %s: shared pause: %w", inv.Gate, err))
		case p.Active(now()):
			return skip(ReasonPaused, describePause(p))
		}
	}
	reason, err := CheckLegacy(g.LegacyLocks, g.LegacyPidfiles)
	if err != nil {
		return fail(ReasonConfig, fmt.Errorf("gate %s: %w", inv.Gate, err))
	}
	if reason != "" {
		r := ReasonLegacyLock
		if strings.HasPrefix(reason, "pidfile") {
			r = ReasonLegacyPidfile
		}
		return skip(r, reason)
	}

	spec := runner.Spec{Argv: inv.Argv, Timeout: inv.Timeout, KillAfter: inv.KillAfter,
		Env: []string{"CRON_GATE_NAME=" + inv.Gate, "CRON_GATE_RUN=" + run}}
	var olog *outputLog
	if g.LogOutput && j != nil {
		olog = newOutputLog(g.LogMaxBytes)
		spec.Stdout = olog.tee(os.Stdout)
		spec.Stderr = olog.tee(os.Stderr)
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
		rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = EventEnd, now(), OutcomeError, ReasonStart, err.Error()
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
	rec.Event, rec.Time, rec.ChildPid, rec.Argv, rec.Detail = EventStart, start, child.Pid(), inv.Argv, note
	rec.ChildStart = processStartTicks(child.Pid())
	record(rec)

	// The run ends when the command does (runner.Child.Wait): the end
	// record gets the command's own end time and outcome, and is written
	// at once; the output that processes it left behind may keep open is
	// drained afterwards, for a bounded time (Child.Drain).
	res := child.Wait(inv.Sigs, start)
	end := now().Add(-time.Since(res.End))
	rec = base
	rec.Event, rec.Time, rec.Started, rec.ChildPid = EventEnd, end, start, res.Pid
	rec.DurationMS = end.Sub(start).Milliseconds()
	code := res.Code
	rec.Exit = &code
	switch {
	case res.TimedOut:
		rec.Outcome, rec.Detail = OutcomeTimeout, fmt.Sprintf("ran past %v", inv.Timeout)
		out.Errorf("gate %s: command timed out after %v", inv.Gate, inv.Timeout)
	case res.Signal != 0:
		rec.Outcome, rec.Signal = OutcomeSignal, signalName(res.Signal)
	case code == 0:
		rec.Outcome = OutcomeSuccess
	case code == skipCode:
		rec.Outcome, rec.Reason, rec.Detail = OutcomeSkipped, ReasonBusy, fmt.Sprintf("the command exited with the skip code %d", code)
	default:
		rec.Outcome = OutcomeFailure
	}
	record(rec)
	if hc != nil {
		hc.Finished(rec)
	}
	if olog != nil {
		note := ""
		if child.Drain() {
			note = cutNote(runner.DefaultDrain)
		}
		olog.close(note)
		if err := olog.save(j, rec); err != nil {
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

// StateDirFor returns the state directory: the config's state_dir, else
// $CRON_GATE_STATE_DIR, else DefaultStateDir for root, else
// $XDG_STATE_HOME/cron-gate or $HOME/.local/state/cron-gate, else
// /var/tmp/cron-gate-UID (cron may start jobs without HOME).
func StateDirFor(cfg *Config) string {
	if cfg != nil && cfg.StateDir != "" {
		return cfg.StateDir
	}
	if d := os.Getenv("CRON_GATE_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return DefaultStateDir
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d + "/cron-gate"
	}
	if h := os.Getenv("HOME"); h != "" {
		return h + "/.local/state/cron-gate"
	}
	return "/var/tmp/cron-gate-" + strconv.Itoa(os.Geteuid())
}
