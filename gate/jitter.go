//go:build linux

package gate

// jitter: before its command starts, a gate waits a stable offset in
// [0, jitter), the same every time for one gate on one host, so that the
// hosts (and gates) whose lines fire in the same second spread out,
// without the drift of a delay drawn afresh each time.

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
)

// MaxJitter is the longest jitter a gate may have, as the `jitter` key or
// the run form's --jitter; longer is refused (125). Jitter spreads hosts
// (and gates) whose lines fire in the same second over a few minutes; a
// wait of hours is not jitter but a schedule, which belongs in the
// crontab's time fields: every tick would leave a process waiting that
// long, invisible to cron. Written once here: the key table (GateTable),
// the run form's check (Run) and the flag's help (${max_jitter}) read it.
const MaxJitter = time.Hour

// JitterOffset returns the gate's offset in [0, jitter) on host: FNV-1a
// (64 bits) of the gate name and the host name, modulo jitter, truncated
// to the millisecond. It depends on nothing else (no clock, no state), so
// it is the same at every call, and the dashboard computes the same one.
// It is 0 when jitter is not positive.
func JitterOffset(gate, host string, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(gate))
	h.Write([]byte{0})
	h.Write([]byte(host))
	d := time.Duration(h.Sum64() % uint64(jitter))
	return d.Truncate(time.Millisecond)
}

// jitterFor is the run's jitter: the run form's --jitter, else the gate's.
func (r *run) jitterFor() time.Duration {
	if r.inv.Jitter > 0 {
		return r.inv.Jitter
	}
	return r.g.Jitter
}

// checkJitter refuses (125, recorded as a config error) a run form's
// --jitter that the `jitter` key would refuse: the bound is the key
// table's (MaxJitter), whichever parser read the line, so a cached run
// and one parsed by kong refuse the same lines. A negative one never
// gets here (crongate.RunArgs.Check, a usage error).
func (r *run) checkJitter() (code int, decided bool) {
	d := r.inv.Jitter
	if d <= 0 {
		return 0, false
	}
	p := GateTable.Key("jitter").Problems(Value{D: d, S: runner.FormatDuration(d)})
	if p == nil {
		return 0, false
	}
	code = r.fail(journal.ReasonConfig, fmt.Errorf("gate %s: --jitter %s", r.inv.Gate, p[0].Msg))
	r.out.Hintf("jitter spreads runs over minutes; a longer wait is a schedule: write it in the crontab's time fields")
	return code, true
}

// wait sleeps the run's jitter offset, holding nothing: every decision is
// made, no lock or claim is held (decideOnce's claim is taken after it).
// A signal ends the wait at once: under the binaries the runner's guard
// exits 128+N (nothing more is recorded, as for any signal before the
// command starts); with Invocation.Sigs alone, wait returns 128+N. The
// offset goes into the wait record, written before the sleep with the
// time the wait ends (until), and into the start record (jitter_ms).
func (r *run) wait() (code int, stop bool) {
	d := JitterOffset(r.inv.Gate, r.base.Host, r.jitterFor())
	if d <= 0 || r.inv.ManualBy != "" {
		return 0, false
	}
	r.base.JitterMS = d.Milliseconds()
	// Said before the sleep, so that status, why and the dashboard show
	// the run as waiting, and until when; the run's next record (start,
	// skip, error) ends it, and a reader drops it once this process is
	// gone (a signal).
	rec := r.record(journal.EventWait, "", "", "")
	rec.Until = rec.Time.Add(d)
	r.append(rec)
	r.out.Infof("gate %s: waiting %v (jitter %v on host %s) before starting the command", r.inv.Gate, d, r.jitterFor(), r.base.Host)
	if r.inv.Wait != nil {
		r.inv.Wait(d)
		return 0, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, false
	case s := <-r.inv.Sigs:
		return runner.SignalCode(s), true
	}
}

// claimOnce takes the period's claim on this host for the rest of the run
// (journal.ClaimPeriod) and checks again, under it, that the period is not
// done: a run that ended since decideOnce (during the jitter) is seen. A
// claim held by another cron-gate of the gate is a run of this period in
// progress: skip (done). Without a journal the period cannot be known:
// the run goes on, as every run does without a journal.
func (r *run) claimOnce() (code int, decided bool) {
	if r.period.Per == "" || r.j == nil {
		return 0, false
	}
	release, held, err := r.j.ClaimPeriod()
	if err != nil {
		return r.fail(journal.ReasonState, fmt.Errorf("gate %s: once_per: %w", r.inv.Gate, err)), true
	}
	if !held {
		return r.skip(journal.ReasonDone, fmt.Sprintf("a run of this period (%s) is in progress", r.period)), true
	}
	r.release = release
	return r.periodDone()
}

// JitterOf is the offset gate g's next run on host waits: the config's
// jitter's (JitterOffset), else the one its latest run waited (the run
// form's --jitter, recorded in its start record), so that a jitter given
// on the crontab line alone is counted in next-run times too.
func JitterOf(g *GateConfig, st *GateStatus, host string) time.Duration {
	if g.Jitter > 0 {
		return JitterOffset(g.Name, host, g.Jitter)
	}
	if st != nil && st.LastStart != nil {
		return time.Duration(st.LastStart.JitterMS) * time.Millisecond
	}
	return 0
}
