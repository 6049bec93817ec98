//go:build linux

package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/statefile"
)

// The digest kept beside each journal (summary.json): what the status
// shows without reading the history, folded in from the journal's
// records and checkpointed every checkpointEvery bytes.

// Digest is what is known of a gate's past: its last events and counts.
// The summary keeps it and the status shows it, with the same JSON names.
type Digest struct {
	LastStart           *Event           `json:"last_start,omitempty"`
	LastEnd             *Event           `json:"last_end,omitempty"`
	LastSuccess         *Event           `json:"last_success,omitempty"`
	LastFailure         *Event           `json:"last_failure,omitempty"`
	LastSkip            *Event           `json:"last_skip,omitempty"`
	LastError           *Event           `json:"last_error,omitempty"`
	ConsecutiveFailures int              `json:"consecutive_failures"`
	Runs                int64            `json:"runs"`
	Successes           int64            `json:"successes"`
	Failures            int64            `json:"failures"`
	Skips               map[string]int64 `json:"skips,omitempty"`
	// ErrorIsLatest: the newest of the gate's error and end records is
	// an error (its last attempt could not start). Decided by journal
	// order, not by timestamps, which a clock step can reorder.
	ErrorIsLatest bool `json:"error_is_latest,omitempty"`

	// LastAttempt is the newest end, skip or error record, but for a
	// skip because the gate was paused or its period was done (once_per):
	// such a gate did not try. Its
	// outcome says whether the gate's last try ran and how it went. It
	// is one of the events above, or an older skip, so the JSON of a
	// status does not repeat it (GateStatus.Skipping says the rest); the
	// checkpoint keeps it (Summary.LastAttemptIs).
	LastAttempt *Event `json:"-"`
	// ConsecutiveSkips counts the skips (busy included, paused and done
	// not) since the last end that ran, error, paused or done skip; SkippingSince
	// is the first of them (zero when there is none).
	ConsecutiveSkips int       `json:"consecutive_skips,omitempty"`
	SkippingSince    time.Time `json:"skipping_since,omitzero"`
	// Recent are the last RecentAttempts attempts, oldest first, paused
	// skips included (they are what happened to the ticks).
	Recent Attempts `json:"recent,omitempty"`
}

// Summary is the per-gate digest kept beside the journal, so that the last
// success and the current state are known without reading the history.
type Summary struct {
	V    int    `json:"v"`
	Gate string `json:"gate"`
	// DigestV is the version of what the checkpoint folds in: a
	// checkpoint written before the digest knew LastAttempt, the skips
	// in a row and Recent (0) is rebuilt from the journal when read.
	DigestV int `json:"digest_v,omitempty"`
	// LastAttemptIs and LastAttemptEv, in the checkpoint only, keep
	// Digest.LastAttempt: the same record as LastEnd, LastSkip or
	// LastError ("end", "skip", "error"), which is then not written
	// twice; else the event itself.
	LastAttemptIs string `json:"last_attempt_is,omitempty"`
	LastAttemptEv *Event `json:"last_attempt,omitempty"`
	Digest
	Running       map[string]Running `json:"running,omitempty"`
	Waiting       map[string]Running `json:"waiting,omitempty"` // runs waiting their jitter (EventWait)
	Records       int                `json:"records"`           // records in the current journal file
	JournalIno    uint64             `json:"journal_ino"`       // the journal file this checkpoint is of
	JournalOffset int64              `json:"journal_offset"`    // bytes of it folded in

	diskOffset    int64   // JournalOffset of the checkpoint on disk; -1: none usable
	problems      []error // torn or corrupt records met while folding in the journal
	checkpointErr error   // why summary.json could not be used (not a regular file, too large)
}

// checkpointEvery is how far the journal may run ahead of summary.json
// before the checkpoint is rewritten: readers fold in at most this much,
// and most appends write one line and nothing else.
const checkpointEvery = 2 << 10

// digestVersion is Summary.DigestV of the checkpoints this code writes.
const digestVersion = 2

// Summary returns the gate's summary, brought up to date with the journal.
// With an error (the checkpoint could not be read), the Summary is empty,
// not nil. Records that could not be read are skipped and said by
// Summary.Problem.
func (j *Journal) Summary() (*Summary, error) {
	return j.readSummary()
}

// Problem says what was wrong with the journal files when s was read:
// the last unreadable record and how many were skipped, or a checkpoint
// that could not be used; nil when nothing was.
func (s *Summary) Problem() error {
	if n := len(s.problems); n > 0 {
		return fmt.Errorf("%v (%d unreadable record(s) skipped)", s.problems[n-1], n)
	}
	return s.checkpointErr
}

// readSummary reads the checkpoint and folds in the journal records past
// its offset; a missing, torn or foreign checkpoint is rebuilt from the
// journal files.
func (j *Journal) readSummary() (*Summary, error) {
	st, err := j.dir.Stat(journalFile)
	if err != nil {
		st.Ino, st.Size = 0, 0
	}
	data, err := j.dir.ReadFile(summaryFile, maxSummaryBytes)
	var fe *safeopen.FileError
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.As(err, &fe) {
		return &Summary{V: 1, Gate: j.Gate}, fmt.Errorf("summary of gate %s: %w", j.Gate, safeopen.Cause(err))
	}
	s := &Summary{}
	if err == nil && decodeSummary(j.Dir, data, s) == nil && s.V == 1 && s.DigestV == digestVersion &&
		(s.JournalIno == st.Ino || (s.JournalIno == 0 && s.JournalOffset == 0)) && s.JournalOffset <= st.Size {
		s.diskOffset = s.JournalOffset
		switch s.LastAttemptIs {
		case "end":
			s.LastAttempt = s.LastEnd
		case "skip":
			s.LastAttempt = s.LastSkip
		case "error":
			s.LastAttempt = s.LastError
		default:
			s.LastAttempt = s.LastAttemptEv
		}
		s.LastAttemptIs, s.LastAttemptEv = "", nil
		if s.JournalOffset < st.Size {
			j.replay(s, journalFile, s.JournalOffset)
		}
		s.JournalIno = st.Ino
		return s, nil
	}
	s = j.rebuild()
	if fe != nil {
		// Not a regular file, or too big: it cannot be the checkpoint;
		// the next write replaces it (rename). Said, not fatal.
		s.checkpointErr = fmt.Errorf("%v; rebuilt from the journal", fe)
	}
	return s, nil
}

// replay folds the records of file (in the gate's directory) from offset
// on into s.
func (j *Journal) replay(s *Summary, file string, offset int64) {
	f, err := j.dir.OpenFile(file, os.O_RDONLY, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.problems = append(s.problems, journalErr(j.dir.Join(file), err))
		}
		return
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return
	}
	recs, errs := ReadRecords(f)
	for _, r := range recs {
		s.apply(r)
	}
	for _, e := range errs {
		s.problems = append(s.problems, fmt.Errorf("%s from byte %d: %w", file, offset, e))
	}
	s.Records += len(recs)
	if end, err := f.Seek(0, io.SeekCurrent); err == nil {
		s.JournalOffset = end
	}
}

// rebuild recomputes the summary from the journal files.
func (j *Journal) rebuild() *Summary {
	s := &Summary{V: 1, Gate: j.Gate, DigestV: digestVersion, diskOffset: -1}
	j.replay(s, journalOldFile, 0)
	s.Records, s.JournalOffset = 0, 0
	j.replay(s, journalFile, 0)
	if st, err := j.dir.Stat(journalFile); err == nil {
		s.JournalIno = st.Ino
	}
	return s
}

// writeSummary replaces the checkpoint atomically, without fsync: the
// journal, fsynced, is what a crash is recovered from (readSummary).
func (j *Journal) writeSummary(s *Summary) error {
	c := *s
	c.LastAttemptEv = s.LastAttempt
	for _, r := range []struct {
		is string
		ev *Event
	}{{"end", s.LastEnd}, {"skip", s.LastSkip}, {"error", s.LastError}} {
		if c.LastAttemptEv != nil && c.LastAttemptEv == r.ev {
			c.LastAttemptEv, c.LastAttemptIs = nil, r.is
		}
	}
	data, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	return statefile.Write(j.dir, summaryFile, append(data, '\n'), statefile.Options{Perm: 0o644, NoSync: true})
}

func eventOf(r Record) *Event {
	return &Event{Run: r.Run, Time: r.Time, Outcome: r.Outcome, Exit: r.Exit, Signal: r.Signal,
		Started: r.Started, DurationMS: r.DurationMS, Reason: r.Reason, Detail: r.Detail,
		Locks: r.Locks, LocksMore: r.LocksMore, HeldBy: r.HeldBy, HeldByMore: r.HeldByMore, Period: r.Period, OncePer: r.OncePer, JitterMS: r.JitterMS, Trigger: r.Trigger, By: r.By, Forced: r.Forced}
}

// attempt folds one attempt (an end, a skip or an error) into the
// digest: the recent ones, the last one, and the skips in a row.
func (d *Digest) attempt(ev *Event) {
	a := Attempt{Time: ev.Time.Truncate(time.Second), Outcome: ev.Outcome, Reason: ev.Reason, Exit: ev.Exit, DurationMS: ev.DurationMS}
	if n := len(d.Recent); n >= RecentAttempts {
		d.Recent = append(d.Recent[:0:0], d.Recent[n-RecentAttempts+1:]...)
	}
	d.Recent = append(d.Recent, a)
	if ev.Outcome == OutcomeSkipped && (ev.Reason == ReasonPaused || ev.Reason == ReasonDone) {
		// Not a try: the gate was paused, or its period is done. What
		// blocked it before is no longer known to hold.
		d.ConsecutiveSkips, d.SkippingSince = 0, time.Time{}
		return
	}
	d.LastAttempt = ev
	if ev.Outcome != OutcomeSkipped {
		d.ConsecutiveSkips, d.SkippingSince = 0, time.Time{}
		return
	}
	if d.ConsecutiveSkips == 0 {
		d.SkippingSince = ev.Time
	}
	d.ConsecutiveSkips++
}

// apply folds one record into the summary.
func (s *Summary) apply(r Record) {
	s.V, s.Gate, s.DigestV = 1, r.Gate, digestVersion
	if s.Running == nil {
		s.Running = map[string]Running{}
	}
	if r.Event == EventWait {
		if s.Waiting == nil {
			s.Waiting = map[string]Running{}
		}
		s.Waiting[r.Run] = Running{Run: r.Run, Pid: r.Pid, StartTicks: r.PidStart, Since: r.Time, Until: r.Until}
	} else if s.Waiting != nil {
		// Any later record of the run ends its wait.
		delete(s.Waiting, r.Run)
		if len(s.Waiting) == 0 {
			s.Waiting = nil
		}
	}
	switch r.Event {
	case EventStart:
		s.LastStart = eventOf(r)
		s.Running[r.Run] = Running{Run: r.Run, Pid: r.Pid, ChildPid: r.ChildPid, StartTicks: r.PidStart, ChildTicks: r.ChildStart, Since: r.Time}
	case EventEnd:
		delete(s.Running, r.Run)
		s.ErrorIsLatest = false
		ev := eventOf(r)
		s.attempt(ev)
		switch r.Outcome {
		case OutcomeSkipped:
			s.skip(r.Reason, ev)
			return
		case OutcomeSuccess:
			s.Runs++
			s.Successes++
			s.LastSuccess = ev
			s.ConsecutiveFailures = 0
		default:
			s.Runs++
			s.Failures++
			s.LastFailure = ev
			s.ConsecutiveFailures++
		}
		s.LastEnd = ev
	case EventSkip:
		ev := eventOf(r)
		s.attempt(ev)
		s.skip(r.Reason, ev)
	case EventError:
		s.ErrorIsLatest = true
		ev := eventOf(r)
		s.attempt(ev)
		s.LastError = ev
		s.skip(r.Reason, ev)
	}
	if len(s.Running) == 0 {
		s.Running = nil
	}
}

func (s *Summary) skip(reason string, ev *Event) {
	if s.Skips == nil {
		s.Skips = map[string]int64{}
	}
	s.Skips[reason]++
	s.LastSkip = ev
}

// ReapVanished turns runs whose cron-gate process is gone into failures
// with outcome "vanished": the run started and nobody recorded its end
// (cron-gate was killed with SIGKILL, or the host crashed). It reports
// whether it found any. It changes s only, not the files: the next Append
// records the same.
func (s *Summary) ReapVanished(now time.Time) bool {
	var gone []string
	for id, r := range s.Running {
		if !r.alive() {
			gone = append(gone, id)
		}
	}
	for id, r := range s.Waiting {
		if !r.alive() {
			// A signal ended the wait: the command never started, and
			// nothing was recorded, as for any signal before the start.
			delete(s.Waiting, id)
		}
	}
	if len(s.Waiting) == 0 {
		s.Waiting = nil
	}
	sort.Strings(gone)
	for _, id := range gone {
		r := s.Running[id]
		delete(s.Running, id)
		ev := &Event{Run: id, Time: now, Outcome: OutcomeVanished, Started: r.Since,
			Detail: fmt.Sprintf("cron-gate pid %d ended without recording the end of the run (killed?)", r.Pid)}
		s.Runs++
		s.Failures++
		s.LastFailure, s.LastEnd = ev, ev
		s.ErrorIsLatest = false
		s.ConsecutiveFailures++
		s.attempt(ev)
	}
	if len(s.Running) == 0 {
		s.Running = nil
	}
	return len(gone) > 0
}

// alive reports whether the run's cron-gate process, or the command it
// started, still exists (the same process, not a recycled PID). A command
// whose cron-gate was killed is still running; its end will never be
// recorded, so once it is gone too the run is judged vanished.
func (r Running) alive() bool {
	same := func(pid int, ticks uint64) bool {
		t := runner.StartTicks(pid)
		return t != 0 && (ticks == 0 || t == ticks)
	}
	return same(r.Pid, r.StartTicks) || (r.ChildPid > 0 && r.ChildTicks != 0 && same(r.ChildPid, r.ChildTicks))
}
