//go:build linux

package gate

// The recording half of Run: the journal, the output log and the
// observer. Each record is one line of the gate's journal (package
// journal); a record that cannot be written is reported on stderr and the
// run goes on.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
)

// refuseConfig refuses a run whose config cannot be used, and records it
// where the journal can be found without the config.
func (r *run) refuseConfig() int {
	r.out.Errorf("%v", r.inv.ConfigErr)
	if h := ConfigHint(r.inv.ConfigErr); h != "" {
		r.out.Hintf("gate %s did not run; %s", r.inv.Gate, h)
	} else {
		r.out.Hintf("gate %s did not run; fix the config, then check it with: cron-gate status", r.inv.Gate)
	}
	j, err := journal.Open(StateDirFor(nil), r.inv.Gate, 0)
	if err != nil {
		return runner.ExitFailure
	}
	defer j.Close()
	if err := j.Append(r.record(journal.EventError, journal.OutcomeError, journal.ReasonConfig, r.inv.ConfigErr.Error())); err != nil {
		r.out.Warnf("journal of gate %s: %v; this failure is not recorded", r.inv.Gate, err)
	}
	return runner.ExitFailure
}

// RecordRefused records in the gate's journal (in the config's state dir;
// without a config, where refuseConfig records) that its run was refused
// for err, the command not run: for a refusal found outside Run (a config
// with [etcd] and no cron-gate-etcd to hand it to), so that status and the
// watchdog see it. It prints nothing: the caller has said why.
func RecordRefused(inv Invocation, err error) {
	if CheckName(inv.Gate) != nil {
		return
	}
	r := newRun(inv)
	j, jerr := journal.Open(StateDirFor(r.cfg), inv.Gate, r.cfg.HistoryFor(inv.Gate))
	if jerr != nil {
		return
	}
	defer j.Close()
	_ = j.Append(r.record(journal.EventError, journal.OutcomeError, journal.ReasonConfig, err.Error()))
}

// openState reads this host's pauses and opens the journal. A state dir
// that another user could have made or redirected (the /var/tmp
// fallback, a symlink planted in /tmp) is not this user's state: a pause
// found there was not set by this user, so it is neither obeyed nor
// allowed to stop the job, and nothing is written there. The run goes
// on, as with an unwritable state dir, and says so.
func (r *run) openState() {
	r.readLocal()
	j, err := journal.Open(StateDirFor(r.cfg), r.inv.Gate, r.cfg.HistoryFor(r.inv.Gate))
	if err != nil {
		r.out.Warnf("journal of gate %s unavailable: %v; this run is not recorded", r.inv.Gate, err)
		return
	}
	r.j = j
}

// readLocal reads this host's command-line pause of the gate.
func (r *run) readLocal() {
	r.local, r.localErr = r.pauses.Local.Get(context.Background(), r.inv.Gate)
	if errors.Is(r.localErr, ErrUntrusted) {
		r.out.Warnf("%v", r.localErr)
		r.local, r.localErr = nil, nil
	}
}

// record returns a record of the run, timed now.
func (r *run) record(event, outcome, reason, detail string) journal.Record {
	rec := r.base
	rec.Event, rec.Time, rec.Outcome, rec.Reason, rec.Detail = event, r.now(), outcome, reason, detail
	return rec
}

// append writes rec to the journal, if there is one.
func (r *run) append(rec journal.Record) {
	if r.j == nil {
		return
	}
	if err := r.j.Append(rec); err != nil {
		r.out.Warnf("journal of gate %s: %v; the %s record of run %s is lost", r.inv.Gate, err, rec.Event, rec.Run)
	}
}

// fail refuses the run: cron-gate's own failure (125), recorded.
func (r *run) fail(reason string, err error) int {
	r.out.Errorf("%v", err)
	r.append(r.record(journal.EventError, journal.OutcomeError, reason, err.Error()))
	return runner.ExitFailure
}

// skip skips the run with the gate's skip code, recorded.
// A skip of a done period is not told to the observer: the period's
// run succeeded, and was told.
func (r *run) skip(reason, detail string) int {
	return r.skipSaying(r.record(journal.EventSkip, journal.OutcomeSkipped, reason, detail), detail)
}

// skipSaying records the skip rec, saying more on stderr (which only the
// run's own user reads) than it records (rec.Detail) or tells the
// observer.
func (r *run) skipSaying(rec journal.Record, said string) int {
	reason := rec.Reason
	r.out.Skipf("skipped gate %s: %s", r.inv.Gate, said)
	r.append(rec)
	if reason != journal.ReasonDone && r.inv.Observer != nil {
		if obs := r.inv.Observer(r.g, r.id, r.out); obs != nil {
			obs.Skipped(rec, r.skipping())
		}
	}
	return r.cfg.SkipCodeFor(r.inv.Gate)
}

// skipping is the gate's run of skips as the journal has it now, with
// what holds the gate back (blocked.go), for the observer; nil when the
// journal cannot say.
func (r *run) skipping() *Skipping {
	if r.j == nil {
		return nil
	}
	s, err := r.j.Summary()
	if err != nil {
		return nil
	}
	var look lookup
	return look.skipping(r.g, &s.Digest)
}

// execute runs the command and records its start and its end.
func (r *run) execute() int {
	spec := runner.Spec{Argv: r.inv.Argv, Timeout: r.inv.Timeout, KillAfter: r.inv.KillAfter,
		Env:     []string{"CRON_GATE_NAME=" + r.inv.Gate, "CRON_GATE_RUN=" + r.id},
		Environ: r.inv.Environ, Dir: r.inv.Dir, Credential: r.inv.Credential}
	olog := r.outputLog(&spec)
	held := r.hold(&spec, olog)
	// A withlock in the command that finds its locks busy names them here
	// (runner.BusyReport); read only after a run that ended busy.
	if f, env, err := runner.NewBusyReport(3 + len(spec.ExtraFiles)); err == nil {
		defer f.Close()
		r.busy = f
		spec.ExtraFiles = append(spec.ExtraFiles, f)
		spec.Env = append(spec.Env, env)
	}
	// Optional healthchecks.io pings (package hcping): none, and no cost,
	// unless the gate has a healthchecks_url; never more than ~2 s.
	var obs RunObserver
	if r.inv.Observer != nil {
		obs = r.inv.Observer(r.g, r.id, r.out)
	}
	child, err := runner.Prepare(spec)
	start := r.now()
	if err == nil {
		if r.claim != nil {
			// The period's claim across hosts lives only as long as this
			// process keeps its lease alive: the command must not outlive
			// it, or another host could run the period beside it.
			child.KillWithParent()
		}
		err = child.Start()
	}
	if err != nil {
		return r.startFailed(err, start, obs)
	}
	if obs != nil {
		obs.Started()
	}
	r.recordStart(child.Pid(), start)
	// The run ends when the command does (runner.Child.Wait): the end
	// record gets the command's own end time and outcome, and is written
	// at once; the output that processes it left behind may keep open is
	// drained afterwards, for a bounded time (Child.Drain).
	sigs, stopWatch := r.watchClaim()
	res := child.Wait(sigs, start)
	stopWatch()
	end := r.endRecord(res, start)
	if r.lost.Load() {
		end.Detail = strings.TrimPrefix(end.Detail+"; stopped: the period's claim across hosts (etcd lease) was lost", "; ")
	}
	// The end record first: writing a chronic run's output out may
	// block on a reader that has stopped reading.
	r.append(end)
	// A chronic run's output is written out before the lines that say
	// how the run ended, so all of it must have come: the drain comes
	// first (bounded, as ever).
	cut, drained := false, false
	if held != nil {
		cut, drained = child.Drain(), true
		held.Release(failed(end) || r.lost.Load())
		if held.EndsMidLine() {
			// Our lines start lines of their own.
			_, _ = os.Stderr.WriteString("\n")
		}
		if err := held.Passed(); err != nil {
			r.out.Warnf("gate %s: chronic: %v; the output was written out as it came", r.inv.Gate, err)
		}
	}
	if res.TimedOut {
		r.out.Errorf("gate %s: command timed out after %v", r.inv.Gate, r.inv.Timeout)
	}
	code := r.endClaim(&end, res.Code)
	if held != nil && failed(end) && !res.TimedOut && !r.lost.Load() {
		r.out.Errorf("gate %s: %s%s", r.inv.Gate, endWords(end), cutWords(cut))
	}
	switch {
	case obs == nil:
	case end.Outcome == journal.OutcomeSkipped:
		obs.Skipped(end, r.skipping())
	default:
		obs.Finished(end)
	}
	if !drained {
		cut = child.Drain()
	}
	if olog != nil {
		r.saveOutput(olog, cut, end)
	}
	return code
}

// hold holds the command's output until the run ends, for a chronic run
// (the gate's chronic, or --chronic): written out only if it fails. With
// log_output, the log sees the output as it comes, held or not.
func (r *run) hold(spec *runner.Spec, olog *journal.OutputLog) *runner.Held {
	if !r.inv.Chronic && (r.g == nil || !r.g.Chronic) {
		return nil
	}
	// Under cron, stdout and stderr are one pipe: one pipe for the
	// command too keeps its lines in the order it wrote them.
	one := runner.SameFile(os.Stdout, os.Stderr)
	h := runner.NewHeld(os.Stdout, os.Stderr, one)
	spec.Stdout, spec.Stderr, spec.OneOutput = h.Stdout(), h.Stderr(), one
	// A reader of our stdout or stderr that has gone must not kill
	// cron-gate with SIGPIPE while it writes the output out: the write
	// fails (EPIPE) and the run ends as it should. (Go resets a caught
	// signal to its default in the command it starts.)
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE)
	if olog != nil {
		spec.Stdout, spec.Stderr = olog.Tee(spec.Stdout), olog.Tee(spec.Stderr)
	}
	return h
}

// failed reports whether an end record is a failed run: one whose output
// a chronic run writes out (a busy end, the skip code, is not).
func failed(end journal.Record) bool {
	return end.Outcome != journal.OutcomeSuccess && end.Outcome != journal.OutcomeSkipped
}

// endWords says how a failed run ended, for the line after a chronic
// run's output.
func endWords(end journal.Record) string {
	switch {
	case end.Signal != "":
		return fmt.Sprintf("the command died of %s after %v", end.Signal, runner.ShortDuration(time.Duration(end.DurationMS)*time.Millisecond))
	case end.Exit != nil:
		return fmt.Sprintf("the command failed with exit %d after %v", *end.Exit, runner.ShortDuration(time.Duration(end.DurationMS)*time.Millisecond))
	}
	return "the command failed"
}

// cutWords is what a chronic run's end line adds when the output was cut.
func cutWords(cut bool) string {
	if !cut {
		return ""
	}
	return fmt.Sprintf("; its output was cut %v after it ended (a process it started still holds its stdout or stderr)", runner.DefaultDrain)
}

// outputLog tees the command's output into an output log when the gate
// keeps one (log_output) and the run is recorded.
func (r *run) outputLog(spec *runner.Spec) *journal.OutputLog {
	if !r.g.LogOutput || r.j == nil {
		return nil
	}
	olog := journal.NewOutputLog(r.g.LogMaxBytes)
	spec.Stdout = olog.Tee(os.Stdout)
	spec.Stderr = olog.Tee(os.Stderr)
	return olog
}

// startFailed records a command that could not be started (126, 127 or
// 125) as the run's end.
func (r *run) startFailed(err error, start time.Time, obs RunObserver) int {
	r.out.Errorf("gate %s: %v", r.inv.Gate, err)
	code := runner.ExitCode(err)
	rec := r.record(journal.EventEnd, journal.OutcomeError, journal.ReasonStart, err.Error())
	rec.Exit, rec.Argv, rec.Started = &code, r.inv.Argv, start
	r.append(rec)
	r.endClaim(&rec, code)
	if obs != nil {
		obs.Finished(rec)
	}
	return code
}

// recordStart records the start of the command, pid.
func (r *run) recordStart(pid int, start time.Time) {
	rec := r.base
	rec.Event, rec.Time, rec.ChildPid, rec.Argv, rec.Detail = journal.EventStart, start, pid, r.inv.Argv, r.note
	rec.ChildStart = runner.StartTicks(pid)
	r.append(rec)
}

// endRecord is the end record of a command that ran: its exit and how it
// ended, timed at its own end.
func (r *run) endRecord(res runner.Result, start time.Time) journal.Record {
	end := r.now().Add(-time.Since(res.End))
	rec := r.base
	rec.Event, rec.Time, rec.Started, rec.ChildPid = journal.EventEnd, end, start, res.Pid
	rec.DurationMS = end.Sub(start).Milliseconds()
	code := res.Code
	rec.Exit = &code
	switch {
	case res.TimedOut:
		rec.Outcome, rec.Detail = journal.OutcomeTimeout, fmt.Sprintf("ran past %v", r.inv.Timeout)
	case res.Signal != 0:
		rec.Outcome, rec.Signal = journal.OutcomeSignal, signalName(res.Signal)
	case code == 0:
		rec.Outcome = journal.OutcomeSuccess
	case code == r.cfg.SkipCodeFor(r.inv.Gate):
		rec.Outcome, rec.Reason, rec.Detail = journal.OutcomeSkipped, journal.ReasonBusy, fmt.Sprintf("the command exited with the skip code %d", code)
		if d := runner.ReadBusyReport(r.busy); d != nil {
			rec.Locks, rec.LocksMore = d.Locks, d.More
			r.recordHeldBy(&rec, lockHolders(d.Locks))
		}
	default:
		rec.Outcome = journal.OutcomeFailure
	}
	return rec
}

// saveOutput keeps the run's output in the gate's output log; cut says
// that the drain was cut short (journal.CutNote).
func (r *run) saveOutput(olog *journal.OutputLog, cut bool, end journal.Record) {
	note := ""
	if cut {
		note = journal.CutNote(runner.DefaultDrain)
	}
	olog.End(note)
	if err := olog.Save(r.j, end); err != nil {
		r.out.Warnf("output log of gate %s: %v; the output of run %s is not kept", r.inv.Gate, err, r.id)
	}
}

func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}
