//go:build linux

// Package journal keeps each gate's run journal under the state dir, the
// digest of it that the status shows, and the optional output log:
//
//	gates/NAME/journal.jsonl    one JSON record per line, appended and fsynced
//	gates/NAME/journal.1.jsonl  the previous journal after rotation
//	gates/NAME/summary.json     the digest: last start/end/success/failure/skip
//	gates/NAME/output.log       last runs' output, when log_output is on
//	gates/NAME/output.1.log     the output log before its last rotation
//	gates/NAME/.lock            the gate's short lock; never deleted
//
// A Journal is opened by gate name; the name is the caller's to check
// (gate.CheckName, which package gate applies before anything reaches
// here): Open refuses only a name that is not one path component, so
// that nothing is ever reached outside gates/.
package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/statefile"
)

// Events of a journal record.
const (
	EventStart = "start" // the command was started
	EventEnd   = "end"   // the command ended (any outcome)
	EventSkip  = "skip"  // the command was not run
	EventError = "error" // cron-gate could not decide (bad config, bad state)
	// EventWait: the run waits its jitter before starting the command,
	// until Record.Until. Its next record (start, skip, error) ends the
	// wait; a wait ended by a signal has none, and readers drop it once
	// the process is gone (Summary.ReapVanished).
	EventWait = "wait"
)

// Outcomes of end, skip and error records.
const (
	OutcomeSuccess  = "success"  // exit 0
	OutcomeFailure  = "failure"  // any other exit that is not the skip code
	OutcomeTimeout  = "timeout"  // stopped by --timeout
	OutcomeSignal   = "signal"   // died of a signal
	OutcomeSkipped  = "skipped"  // not run, or the command itself exited with the skip code
	OutcomeError    = "error"    // cron-gate's own failure; the command did not run
	OutcomeVanished = "vanished" // cron-gate was killed while the command ran: no end record
)

// TriggerManual is Record.Trigger of a run a person asked for.
const TriggerManual = "manual"

// Reasons for skips and errors.
const (
	ReasonPaused        = "paused"
	ReasonLegacyLock    = "legacy_lock"
	ReasonLegacyPidfile = "legacy_pidfile"
	ReasonBusy          = "busy" // the command exited with the skip code (withlock found its locks busy)
	ReasonConfig        = "config_error"
	ReasonState         = "state_error"
	ReasonStart         = "start_error" // the command could not be started (126, 127)
	// ReasonCoordinatorDown: the shared pauses could not be read (fail
	// closed; on_coordinator_down = "skip").
	ReasonCoordinatorDown = "coordinator_down"
	// ReasonDone: the gate has once_per and its current period already
	// has a successful run (or one in progress). Like a paused skip, it
	// is not an attempt: the gate did what it had to.
	ReasonDone = "done"
)

// Reasons are every reason a skip or error record is written with, in a
// fixed order: the values a reader can expect (metrics export each of a
// gate's counters from zero).
var Reasons = []string{ReasonPaused, ReasonLegacyLock, ReasonLegacyPidfile, ReasonBusy,
	ReasonCoordinatorDown, ReasonDone, ReasonConfig, ReasonState, ReasonStart}

// Record is one line of a gate's journal (JSON Lines, schema version 1;
// docs/cron-gate.md, "Journal"). Fields not relevant to an event are omitted.
type Record struct {
	V          int       `json:"v"`
	Gate       string    `json:"gate"`
	Run        string    `json:"run"`
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	Pid        int       `json:"pid,omitempty"`       // cron-gate's own PID
	PidStart   uint64    `json:"pid_start,omitempty"` // its start time in clock ticks since boot
	ChildPid   int       `json:"child_pid,omitempty"` // the command's PID
	ChildStart uint64    `json:"child_start,omitempty"`
	Argv       []string  `json:"argv,omitempty"`
	Host       string    `json:"host,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	Exit       *int      `json:"exit,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	// Locks, in an end record with reason busy, are the locks the
	// command's withlock takes (path locks, then slot files), as far as
	// cron-gate could read its command line; at most MaxLocks of them,
	// LocksMore saying how many more there were. The holders are looked
	// up when the status is read (gate.Status).
	Locks     []Lock `json:"locks,omitempty"`
	LocksMore int    `json:"locks_more,omitempty"`
	// HeldBy, in a busy end record or a legacy_lock / legacy_pidfile skip,
	// are the processes that held those locks at that moment (at most
	// MaxHeldBy, HeldByMore saying how many more), each with the
	// cron-gate run it belongs to when it is one: who blocked whom, as
	// it was, for the dashboard's timeline and why.
	HeldBy     []HeldBy `json:"held_by,omitempty"`
	HeldByMore int      `json:"held_by_more,omitempty"`
	// Period, for a gate with once_per, is the period the run was called
	// in (gate.Period.Key: its start, RFC 3339): a success counts for it,
	// whenever the command started.
	Period string `json:"period,omitempty"`
	// OncePer is the once_per the run was held to ("1d", "slot"...),
	// from the config or the run form's --once-per: what status reads for
	// a gate whose config does not say it.
	OncePer string `json:"once_per,omitempty"`
	// Trigger is TriggerManual for a run asked for by a person
	// (cron-gate trigger, the dashboard's "run now"), By who asked, and
	// Forced that it was told to go past the pauses (the start record's
	// detail names the pause); "" for cron's runs.
	Trigger string `json:"trigger,omitempty"`
	By      string `json:"by,omitempty"`
	Forced  bool   `json:"forced,omitempty"`
	// JitterMS is the jitter offset the run waited before starting its
	// command (gate.JitterOffset), in the records written after the wait.
	JitterMS int64 `json:"jitter_ms,omitempty"`
	// Until, in a wait record, is when the wait ends and the command is
	// due to start.
	Until time.Time `json:"until,omitzero"`
}

// MaxHeldBy bounds the holders a record names (Record.HeldBy).
const MaxHeldBy = 4

// HeldBy is a process that held a lock the run found busy, looked up at
// skip time. Pid and PidStart identify it (a recycled pid has another
// start); Gate and Run name the cron-gate run it was part of (itself,
// or an ancestor within a few generations), "" when it was none.
// Command is its command line, neutralised and cut (as gate.Holder's),
// and only where /proc shows every command line to every user
// (lockfile.CommandsShownToAll): the journal is world-readable.
type HeldBy struct {
	Pid      int    `json:"pid,omitempty"`
	PidStart uint64 `json:"pid_start,omitempty"`
	Command  string `json:"command,omitempty"`
	Gate     string `json:"gate,omitempty"`
	Run      string `json:"run,omitempty"`
}

// MaxLocks bounds the path locks a busy record names (Record.Locks).
const MaxLocks = runner.MaxBusyPaths

// Lock is one lock file of a busy record: what the withlock that found it
// busy reported (runner.BusyLock).
type Lock = runner.BusyLock

// Event is what a summary keeps of one record.
type Event struct {
	Run        string    `json:"run"`
	Time       time.Time `json:"time"`
	Outcome    string    `json:"outcome,omitempty"`
	Exit       *int      `json:"exit,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	Locks      []Lock    `json:"locks,omitempty"` // a busy skip's (Record.Locks)
	LocksMore  int       `json:"locks_more,omitempty"`
	HeldBy     []HeldBy  `json:"held_by,omitempty"` // Record.HeldBy
	HeldByMore int       `json:"held_by_more,omitempty"`
	Period     string    `json:"period,omitempty"`    // Record.Period
	OncePer    string    `json:"once_per,omitempty"`  // Record.OncePer
	JitterMS   int64     `json:"jitter_ms,omitempty"` // Record.JitterMS
	Trigger    string    `json:"trigger,omitempty"`   // Record.Trigger
	By         string    `json:"by,omitempty"`
	Forced     bool      `json:"forced,omitempty"`
}

// Attempt is one attempt of the gate in Digest.Recent: a run that ended
// (any outcome, a busy skip included), a skip, or an error. A list of
// them in a digest (Attempts) has a compact JSON of its own; one alone
// (as in cron-gate why --json) is an object with the keys below.
type Attempt struct {
	Time       time.Time `json:"time"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason,omitempty"`
	Exit       *int      `json:"exit"` // null: none (a skip, a signal)
	DurationMS int64     `json:"duration_ms"`
}

// RecentAttempts is how many attempts Digest.Recent keeps.
const RecentAttempts = 20

// Running is a run that has started and not yet ended; in
// Summary.Waiting, one that waits its jitter before starting (Until).
type Running struct {
	Run        string    `json:"run"`
	Pid        int       `json:"pid"`
	ChildPid   int       `json:"child_pid,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"` // of Pid, to tell a recycled PID
	ChildTicks uint64    `json:"child_ticks,omitempty"` // of ChildPid
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until,omitzero"` // a waiting run: when its command is due to start
}

// File names inside a gate's state directory.
const (
	journalFile    = "journal.jsonl"
	journalOldFile = "journal.1.jsonl"
	summaryFile    = "summary.json"
	gateLockFile   = ".lock"
)

// Journal is one gate's run journal in StateDir/gates/NAME/.
//
// Guarantees: every Append is one write of one line to journal.jsonl under
// the gate's short flock, so concurrent cron-gate processes never lose or
// interleave each other's records. End, skip and error records are fsynced
// before Append returns; a start record is not (the end record's fsync
// flushes it, and a crash in between ends the run anyway).
//
// The journal is the truth. summary.json is a checkpoint of it — the
// digest of every record up to a byte offset of journal.jsonl — replaced
// atomically (temp file and rename) but not fsynced: whoever reads it folds
// in the records past its offset, and rebuilds it from the journal if it is
// missing, torn or belongs to another journal file. So the last success is
// always known, and a call costs the same whatever the length of the
// history: the journal is appended, never rewritten, and rotated
// (journal.jsonl -> journal.1.jsonl) once it holds History records, so
// between History and 2×History records are kept.
//
// Every file of the journal is opened through the gate directory's
// descriptor (internal/safeopen): never by a path, never through a
// symlink, and only if it is a regular file (a FIFO or a device there is
// an error at once, not a hang).
type Journal struct {
	Gate    string
	Dir     string // for messages
	History int
	dir     *safeopen.Dir
}

// Limits on what is read of a gate's directory: more is refused (a
// summary is rebuilt from the journal), so that no file can make a call
// slow or big.
const (
	maxSummaryBytes = 16 << 20
	// maxRecordBytes bounds one journal line: a record holds the command
	// line, which Linux bounds at 2 MiB by default (ARG_MAX).
	maxRecordBytes = 8 << 20
)

// Open opens the gate's journal under the state dir to write it,
// creating the state dir and gates/NAME (0755) if needed. history is the
// number of records kept before rotation; 0 or less is DefaultHistory.
// Its errors wrap safeopen's ErrUnsafe when the state dir, or a directory
// or symlink above it, is another user's: a journal is never written
// there.
func Open(stateDir, gate string, history int) (*Journal, error) {
	sd, err := statefile.OpenDir(stateDir)
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	return openIn(sd, gate, history)
}

// openIn opens (creating it if needed) gates/NAME under the open state dir
// sd, which stays open.
func openIn(sd *safeopen.Dir, gate string, history int) (*Journal, error) {
	if err := checkName(gate); err != nil {
		return nil, err
	}
	o := statefile.DirOptions(true, false)
	o.NoFollowLast = true
	dir, err := sd.OpenDir(filepath.Join("gates", gate), o)
	if err != nil {
		return nil, err
	}
	if history <= 0 {
		history = DefaultHistory
	}
	return &Journal{Gate: gate, Dir: dir.Path, History: history, dir: dir}, nil
}

// checkName refuses a gate name that is not one path component.
func checkName(gate string) error {
	if gate == "" || gate == "." || gate == ".." || strings.ContainsAny(gate, "/\x00") {
		return fmt.Errorf("journal: gate name %q is not a directory name", gate)
	}
	return nil
}

// readIn opens the gate's journal under sd to read it, as another user
// may: nil and no error when the gate has no directory (or no name that
// could have one).
func readIn(sd *safeopen.Dir, gate string) (*Journal, error) {
	if checkName(gate) != nil {
		return nil, nil
	}
	o := statefile.DirOptions(false, true)
	o.NoFollowLast = true
	dir, err := sd.OpenDir(filepath.Join("gates", gate), o)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Journal{Gate: gate, Dir: dir.Path, History: DefaultHistory, dir: dir}, nil
}

// A Reader reads the journals under one state dir, through one
// descriptor of it, as another user may: it creates, locks and writes
// nothing.
type Reader struct {
	sd *safeopen.Dir
}

// NewReader opens the state dir to read its journals, whoever owns it
// (a status view may run as another user). errors.Is(err,
// fs.ErrNotExist) when there is no state dir.
func NewReader(stateDir string) (*Reader, error) {
	sd, err := statefile.OpenDirToRead(stateDir)
	if err != nil {
		return nil, err
	}
	return &Reader{sd: sd}, nil
}

// Close releases the state dir.
func (r *Reader) Close() error { return r.sd.Close() }

// Journal opens the gate's journal to read it: nil and no error when the
// gate has no directory. Close it after use.
func (r *Reader) Journal(gate string) (*Journal, error) { return readIn(r.sd, gate) }

// Gates returns the names of the directories in gates/, in no particular
// order; the caller checks that each is a gate name. No gates/ is none.
func (r *Reader) Gates() ([]string, error) {
	gd, err := r.sd.OpenDir("gates", statefile.DirOptions(false, true))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer gd.Close()
	names, err := gd.Names()
	var out []string
	for _, n := range names {
		if st, err := gd.Stat(n); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && checkName(n) == nil {
			out = append(out, n)
		}
	}
	return out, err
}

// readAt opens the gate's journal under stateDir to read it, as another
// user may: nil and no error when there is none.
func readAt(stateDir, gate string) (*Journal, error) {
	sd, err := statefile.OpenDirToRead(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	return readIn(sd, gate)
}

// openOutputLog opens the gate's output log under stateDir to read it;
// errors.Is(err, fs.ErrNotExist) when there is none.
func openOutputLog(stateDir, gate string) (*os.File, error) {
	j, err := readAt(stateDir, gate)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fs.ErrNotExist
	}
	defer j.Close()
	return j.dir.OpenFile(outputFile, os.O_RDONLY, 0)
}

// openOutputAppend opens output.log to append a section of n bytes,
// renaming it to output.1.log first when it would grow past max. Called
// under the gate's lock.
func (j *Journal) openOutputAppend(n, max int64) (*os.File, error) {
	if st, err := j.dir.Stat(outputFile); err == nil && st.Size+n > max {
		if err := j.dir.Rename(outputFile, outputOldFile); err != nil {
			return nil, err
		}
	}
	// 0600: a command's output is its owner's (it may hold anything,
	// another user's holder named by withlock included); one an older
	// release left 0644 is tightened on the descriptor (the file is
	// ours: the state dir is).
	f, err := j.dir.OpenFile(outputFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
			return nil, fe
		}
		return nil, safeopen.Cause(err)
	}
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, fmt.Errorf("output log: %w", err)
		}
	}
	return f, nil
}

// DefaultHistory is the number of records kept per gate before rotation.
const DefaultHistory = 1000

// Close releases the directory handle.
func (j *Journal) Close() error { return j.dir.Close() }

// Append writes rec and folds it into the summary.
func (j *Journal) Append(rec Record) error {
	rec.V = 1
	rec.Gate = j.Gate
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if rec.Event == EventStart || rec.Event == EventWait {
		// On the per-tick path while the command already runs (or is
		// about to wait): append only. Readers fold it in past the
		// checkpoint's offset.
		return statefile.Locked(context.Background(), j.dir, gateLockFile, 0, func() error {
			_, _, err := j.appendLine(line, false)
			return err
		})
	}
	return statefile.Locked(context.Background(), j.dir, gateLockFile, 0, func() error {
		s, _ := j.readSummary()
		ino, end, err := j.appendLine(line, true)
		if err != nil {
			return err
		}
		s.JournalIno, s.JournalOffset = ino, end
		s.Records++
		s.apply(rec)
		reaped := s.ReapVanished(rec.Time)
		if s.Records >= j.History {
			if err := j.dir.Rename(journalFile, journalOldFile); err != nil {
				return fmt.Errorf("rotate journal: %w", err)
			}
			s.Records, s.JournalIno, s.JournalOffset = 0, 0, 0
			_ = j.writeSummary(s) // as below: the journal has the record
			return nil
		}
		if reaped || s.diskOffset < 0 || end-s.diskOffset > checkpointEvery {
			// The record is safe in the journal; a checkpoint that cannot
			// be written (disk full) is rebuilt by the next reader.
			_ = j.writeSummary(s)
		}
		return nil
	})
}

// journalSync is (*os.File).Sync, a variable only so that a test can see
// which records are fsynced (journal_sync_test.go).
var journalSync = (*os.File).Sync

// appendLine appends one record and returns the journal file's inode.
func (j *Journal) appendLine(line []byte, durable bool) (uint64, int64, error) {
	p := j.dir.Join(journalFile)
	f, err := j.dir.OpenFile(journalFile, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, 0, journalErr(p, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, fmt.Errorf("journal %s: %w", p, err)
	}
	if st.Size > 0 {
		// A record torn by a crash has no newline; end it, so that this
		// record is not glued to it and lost too.
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return 0, 0, fmt.Errorf("journal %s: %w", p, safeopen.Cause(err))
	}
	if durable {
		if err := journalSync(f); err != nil {
			return 0, 0, fmt.Errorf("journal %s: fsync: %w", p, safeopen.Cause(err))
		}
	}
	return st.Ino, st.Size + int64(len(line)), nil
}

// journalErr words an error opening a journal file.
func journalErr(p string, err error) error { return statefile.FileErr("journal", p, err) }

// ReadRecords parses a journal. Lines that are not valid records (a torn
// write, corruption, a line longer than 8 MiB) are skipped; each yields one
// error naming the line. It never panics, and holds at most one line of
// 8 MiB at a time besides the records.
func ReadRecords(r io.Reader) ([]Record, []error) {
	var recs []Record
	var errs []error
	br := bufio.NewReaderSize(r, 64*1024)
	var buf []byte
	for n := 1; ; n++ {
		line, long, err := readBoundedLine(br, buf[:0], maxRecordBytes)
		buf = line
		if long {
			errs = append(errs, fmt.Errorf("line %d: longer than %s, not a journal record", n, safeopen.Size(maxRecordBytes)))
		} else if len(line) > 0 {
			complete := line[len(line)-1] == '\n'
			line = bytes.TrimSpace(line)
			if len(line) > 0 {
				var rec Record
				switch {
				case !complete:
					errs = append(errs, fmt.Errorf("line %d: torn record (no newline)", n))
				case json.Unmarshal(line, &rec) != nil || rec.V != 1 || rec.Event == "":
					errs = append(errs, fmt.Errorf("line %d: not a journal record", n))
				default:
					recs = append(recs, rec)
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				errs = append(errs, err)
			}
			return recs, errs
		}
	}
}

// readBoundedLine appends the next line (newline included) to buf; a line
// longer than max is read to its end but not kept (long is set).
func readBoundedLine(br *bufio.Reader, buf []byte, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > max {
				long, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return buf, long, err
		}
	}
}

// Records returns the journal's records, oldest first (rotated file
// included), and the problems met while reading.
func (j *Journal) Records() ([]Record, []error) {
	var all []Record
	var errs []error
	for _, name := range []string{journalOldFile, journalFile} {
		f, err := j.dir.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, journalErr(j.dir.Join(name), err))
			}
			continue
		}
		recs, es := ReadRecords(f)
		f.Close()
		all = append(all, recs...)
		for _, e := range es {
			errs = append(errs, fmt.Errorf("%s %w", name, e))
		}
	}
	return all, errs
}
