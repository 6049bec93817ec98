//go:build linux

package gate

// The blocked state: a gate whose recent attempts were all skips, and what
// holds it back now, looked up when the status is read. The rule is
// decided here once; status, why, check, the dashboard and the metrics
// all read GateStatus.Skipping.

import (
	"fmt"
	"strings"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/lockfile"
)

// BlockedSkips is how many skips in a row make a gate blocked, whatever
// its interval.
const BlockedSkips = 3

// Skipping is the gate's current run of skips: set when its last attempt
// was skipped for any reason but a pause (journal.Digest.LastAttempt).
//
// The rule (Blocked): the run of skips is BlockedSkips long, or its first
// and last skips are at least one interval apart (gates with an
// interval). It is judged from the journal alone, so every view agrees
// and no clock is involved: a gate that skipped once and was not tried
// again is not blocked (the watchdog's stale condition sees that).
type Skipping struct {
	Reason  string    `json:"reason"`           // the last skip's reason (journal.Reason*)
	Detail  string    `json:"detail,omitempty"` // the last skip's detail, as recorded
	Since   time.Time `json:"since"`            // the first skip of the run
	Last    time.Time `json:"last"`             // the last skip
	Skips   int       `json:"skips"`            // skips in a row
	Blocked bool      `json:"blocked"`          // the rule above holds
	// Locks are what holds the gate back now, looked up when the status
	// was read: the gate's legacy locks or pidfiles, or the locks of its
	// last busy skip (LocksMore more were not recorded). Holders can be
	// stale by the time they are shown.
	Locks     []LockState `json:"locks,omitempty"`
	LocksMore int         `json:"locks_more,omitempty"`
	// Note says why no holder can be named, when none can.
	Note string `json:"note,omitempty"`
}

// Kinds of LockState.
const (
	LockLegacy  = "legacy_lock"    // a legacy lock file (legacy_locks)
	LockPidfile = "legacy_pidfile" // a pidfile (legacy_pidfiles)
	LockPath    = "path"           // a withlock path lock
	LockSlot    = "slot"           // a withlock slot file
	LockClaim   = "period_claim"   // the gate's period claim (once_per: gates/NAME/period.lock)
)

// States of LockState.
const (
	LockHeld    = "held"
	LockFree    = "free"
	LockUnknown = "unknown" // /proc/locks unreadable, or the file could not be looked at (Error)
)

// LockState is one thing that can hold a gate back, and its state now.
type LockState struct {
	Kind    string   `json:"kind"`           // LockLegacy, LockPidfile, LockPath, LockSlot
	Path    string   `json:"path"`           // the file configured; a path lock: the canonical path; a slot: its pool's template
	File    string   `json:"file,omitempty"` // path and slot: the lock file
	State   string   `json:"state"`          // LockHeld, LockFree, LockUnknown
	Holders []Holder `json:"holders,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Holder is a process that holds a lock, or that a pidfile names.
type Holder struct {
	Pid     int       `json:"pid,omitempty"`     // 0: a process not visible here (another PID namespace, an OFD lock)
	Command string    `json:"command,omitempty"` // its command line, neutralised and cut (lockfile.ProcessCommand)
	Started time.Time `json:"started,omitzero"`  // when it started (/proc; up to 1 s early)
	Shared  bool      `json:"shared,omitempty"`  // a shared lock
	// InheritedFrom is the pid that placed the lock and exited; the
	// lock lives on in this process's inherited descriptor.
	InheritedFrom int `json:"inherited_from,omitempty"`
}

// HideCommands leaves out the holders' command lines of every gate, for a
// report shown to someone other than the user who made it (the
// dashboard, the watchdog's check.json and alerts), unless /proc shows
// every command line to every user (lockfile.CommandsShownToAll): a
// reader must not see through us what hidepid hides from them. The pids
// and start times stay. `status` and `why` need not: they look holders up
// with their reader's own rights.
func (r *Report) HideCommands() {
	if lockfile.CommandsShownToAll() {
		return
	}
	for i := range r.Gates {
		k := r.Gates[i].Skipping
		if k == nil {
			continue
		}
		c := *k
		c.Locks = make([]LockState, len(k.Locks))
		for j, ls := range k.Locks {
			ls.Holders = append([]Holder(nil), ls.Holders...)
			for h := range ls.Holders {
				ls.Holders[h].Command = ""
			}
			c.Locks[j] = ls
		}
		r.Gates[i].Skipping = &c
	}
}

// Blocked reports whether the gate is blocked (Skipping's rule), whatever
// its state: a failing or paused gate can be blocked too.
func (st *GateStatus) Blocked() bool { return st.Skipping != nil && st.Skipping.Blocked }

// readLockTable reads /proc/locks; a variable so that a test can count the
// reads (TestStatusReadsProcLocksOnce).
var readLockTable = lockfile.ReadLockTable

// lookup is what one Status call looks up about holders: /proc/locks is
// read at most once, however many gates are blocked, and the boot time
// once.
type lookup struct {
	table  *lockfile.LockTable
	starts runner.ProcessStarts
}

func (l *lookup) locks() *lockfile.LockTable {
	if l.table == nil {
		l.table = readLockTable()
	}
	return l.table
}

func (l *lookup) holder(h lockfile.Holder) Holder {
	out := Holder{Pid: h.Pid, Command: h.Command, Shared: h.Shared, Started: h.Started}
	if h.Exited && h.PlacedBy > 0 {
		out.InheritedFrom = h.PlacedBy
	}
	return out
}

// skipping returns the gate's current run of skips, with what holds it
// back now; nil when its last attempt was not a skip.
func (l *lookup) skipping(g *GateConfig, d *journal.Digest) *Skipping {
	a := d.LastAttempt
	if d.ConsecutiveSkips == 0 || a == nil || a.Outcome != journal.OutcomeSkipped {
		return nil
	}
	sk := &Skipping{Reason: a.Reason, Detail: a.Detail, Since: d.SkippingSince, Last: a.Time, Skips: d.ConsecutiveSkips}
	sk.Blocked = sk.Skips >= BlockedSkips || (g.Interval > 0 && sk.Last.Sub(sk.Since) >= g.Interval)
	switch a.Reason {
	case journal.ReasonLegacyLock:
		for _, p := range g.LegacyLocks {
			sk.Locks = append(sk.Locks, l.lockFile(LockLegacy, p, p, true))
		}
	case journal.ReasonLegacyPidfile:
		for _, p := range g.LegacyPidfiles {
			sk.Locks = append(sk.Locks, l.pidfile(p))
		}
	case journal.ReasonBusy:
		for _, lk := range a.Locks {
			if lk.Pool != "" {
				sk.Locks = append(sk.Locks, l.lockFile(LockSlot, lk.Pool, lk.File, false))
			} else {
				sk.Locks = append(sk.Locks, l.lockFile(LockPath, lk.Path, lk.File, false))
			}
		}
		sk.LocksMore = a.LocksMore
		if len(a.Locks) == 0 {
			sk.Note = "the command exited with the skip code; which locks it found busy is not known: its command line is not one cron-gate reads as a local withlock's (withlock who PATH... asks)"
		}
	case journal.ReasonCoordinatorDown:
		sk.Note = "the shared pauses (etcd) could not be read; the gate skips until they can (on_coordinator_down)"
	}
	if (a.Reason == journal.ReasonLegacyLock || a.Reason == journal.ReasonLegacyPidfile) && len(sk.Locks) == 0 {
		sk.Note = "the config no longer names the legacy files this skip was about"
	}
	return sk
}

// lockFile looks up one lock file in the /proc/locks table. legacyLock:
// only an exclusive lock holds the gate back (a shared one is another
// cron-gate's probe).
func (l *lookup) lockFile(kind, path, file string, legacyLock bool) LockState {
	ls := LockState{Kind: kind, Path: path, State: LockFree}
	if kind != LockLegacy {
		ls.File = file
	}
	t := l.locks()
	_, hs, err := t.HoldersOf(file)
	switch {
	case err != nil:
		ls.State, ls.Error = LockUnknown, err.Error()
		return ls
	case !t.Readable():
		ls.State, ls.Error = LockUnknown, "/proc/locks cannot be read here"
		return ls
	}
	for _, h := range hs {
		if legacyLock && h.Shared {
			continue
		}
		ls.State = LockHeld
		ls.Holders = append(ls.Holders, l.holder(h))
	}
	return ls
}

// periodClaim looks up the gate's period claim (once_per) in the
// /proc/locks table: nil unless it is held. Whoever holds it is running
// the gate's run of this period, or stuck: a run skips meanwhile ("a run
// of this period is in progress").
func (l *lookup) periodClaim(jr *journal.Reader, name string) *LockState {
	if jr == nil || CheckName(name) != nil {
		return nil
	}
	j, err := jr.Journal(name)
	if err != nil || j == nil {
		return nil
	}
	path, dev, ino, ok := j.ClaimFile()
	j.Close()
	if !ok {
		return nil
	}
	t := l.locks()
	if !t.Readable() || !t.Locked(dev, ino) {
		return nil
	}
	ls := LockState{Kind: LockClaim, Path: path, File: path, State: LockHeld}
	for _, h := range t.Holders(dev, ino) {
		ls.Holders = append(ls.Holders, l.holder(h))
	}
	return &ls
}

// pidfile looks at one pidfile, as the run does (ReadPidfile).
func (l *lookup) pidfile(path string) LockState {
	ls := LockState{Kind: LockPidfile, Path: path, State: LockFree}
	p, err := ReadPidfile(path)
	switch {
	case err != nil:
		ls.State, ls.Error = LockUnknown, err.Error()
	case p.Alive:
		ls.State = LockHeld
		ls.Holders = []Holder{{Pid: p.Pid, Command: p.Command, Started: l.starts.Of(p.Pid)}}
	}
	return ls
}

// LegacyNow looks up, now, every legacy lock and pidfile of the gate, as
// a run would find them (without taking any lock: /proc/locks, read
// once, and the pidfiles), for `cron-gate why`.
func LegacyNow(g *GateConfig) []LockState {
	var l lookup
	var out []LockState
	for _, p := range g.LegacyLocks {
		out = append(out, l.lockFile(LockLegacy, p, p, true))
	}
	for _, p := range g.LegacyPidfiles {
		out = append(out, l.pidfile(p))
	}
	return out
}

// DescribePause is a pause for people, one line: "paused by command
// (ops@host): quota, until 2026-11-29T10:00:00Z" (what a skipped run
// records).
func DescribePause(p *Pause) string { return describePause(p) }

// String says who holds it: "pid 99 (python3 old.py), started 2026-11-29
// 08:00:00 KST", times in local time: lockfile.Holder's words, and the
// start time.
func (h Holder) String() string {
	s := lockfile.Holder{Pid: h.Pid, Command: h.Command, Shared: h.Shared, Exited: h.InheritedFrom > 0, PlacedBy: h.InheritedFrom}.String()
	if !h.Started.IsZero() {
		s += ", started " + h.Started.Local().Format("2006-01-02 15:04:05 MST")
	}
	return s
}

// String says what the lock is and its state, on one line: "legacy lock
// /tmp/x.lock: held by pid 99 (python3 old.py), started …".
func (ls LockState) String() string {
	var what string
	switch ls.Kind {
	case LockLegacy:
		what = "legacy lock " + ls.Path
	case LockPidfile:
		what = "pidfile " + ls.Path
	case LockPath:
		what = ls.Path + " (lock " + ls.File + ")"
	case LockSlot:
		what = "slot " + ls.File + " of pool " + ls.Path
	case LockClaim:
		what = "period claim " + ls.Path
	default:
		what = ls.Path
	}
	switch ls.State {
	case LockHeld:
		if len(ls.Holders) == 0 {
			return what + ": held by a process not visible here"
		}
		hs := make([]string, len(ls.Holders))
		for i, h := range ls.Holders {
			hs[i] = h.String()
		}
		verb := "held by "
		if ls.Kind == LockPidfile {
			verb = "names live "
		}
		return what + ": " + verb + strings.Join(hs, "; ")
	case LockUnknown:
		return what + ": unknown (" + ls.Error + ")"
	}
	return what + ": free now"
}

// Holding returns the locks that are held now; for a slot pool, only a
// pool whose every recorded slot is held holds the gate back, and its
// slots are returned together.
func (s *Skipping) Holding() []LockState {
	var out []LockState
	full := map[string]bool{}
	for _, ls := range s.Locks {
		if ls.Kind == LockSlot {
			if _, seen := full[ls.Path]; !seen {
				full[ls.Path] = true
			}
			full[ls.Path] = full[ls.Path] && ls.State == LockHeld
		}
	}
	for _, ls := range s.Locks {
		if ls.State == LockHeld && (ls.Kind != LockSlot || full[ls.Path]) {
			out = append(out, ls)
		}
	}
	return out
}

// Words says in one line what holds the gate back now, as far as it is
// known: the held locks (at most three named), else the note, else the
// last skip's detail.
func (s *Skipping) Words() string {
	held := s.Holding()
	if len(held) > 0 {
		var parts []string
		for i, ls := range held {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("and %d more", len(held)-3))
				break
			}
			parts = append(parts, ls.String())
		}
		return strings.Join(parts, "; ")
	}
	for _, ls := range s.Locks {
		if ls.State == LockUnknown {
			return "not known: " + ls.String()
		}
	}
	if len(s.Locks) > 0 {
		return "nothing holds it now (" + s.Locks[0].String() + "): the next attempt should run"
	}
	if s.Note != "" {
		return s.Note
	}
	return s.Detail
}
