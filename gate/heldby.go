//go:build linux

package gate

// Who held the locks a run found busy, looked up at skip time and
// recorded (journal.Record.HeldBy): the pid, its start, and the cron-gate
// run it belongs to, found by walking up its parents and matching each
// against the running runs in the journals. Only the skip paths pay for
// it (a busy end, a legacy lock or pidfile skip); a run that goes ahead
// never reaches here.

import (
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/lockfile"
)

// Bounds of the look-up: how far up a holder's parents a cron-gate run is
// looked for (a withlock under a shell under cron-gate is 2), and how many
// gates' running runs are read.
const (
	heldByDepth    = 16
	heldByMaxGates = 512
)

// procID is a process as a journal names it: its pid and start ticks.
type procID struct {
	pid   int
	ticks uint64
}

// runIndex maps the processes of the running cron-gate runs (cron-gate
// itself and its command) to their gate and run, read once per look-up.
type runIndex map[procID]journal.HeldBy

// readRunIndex reads the running runs of every gate under stateDir but
// the run self; none when the state dir cannot be read.
func readRunIndex(stateDir, self string) runIndex {
	idx := runIndex{}
	jr, err := journal.NewReader(stateDir)
	if err != nil {
		return idx
	}
	defer jr.Close()
	names, _ := jr.Gates()
	if len(names) > heldByMaxGates {
		names = names[:heldByMaxGates]
	}
	for _, name := range names {
		j, err := jr.Journal(name)
		if err != nil || j == nil {
			continue
		}
		s, _ := j.Summary()
		j.Close()
		for id, rn := range s.Running {
			if id == self {
				continue
			}
			hb := journal.HeldBy{Gate: name, Run: id}
			if rn.Pid > 0 && rn.StartTicks > 0 {
				idx[procID{rn.Pid, rn.StartTicks}] = hb
			}
			if rn.ChildPid > 0 && rn.ChildTicks > 0 {
				idx[procID{rn.ChildPid, rn.ChildTicks}] = hb
			}
		}
	}
	return idx
}

// runOf walks up from the process p (at most heldByDepth generations) and
// returns the first cron-gate run found: p's own, or an ancestor's.
func (idx runIndex) runOf(p procID) (journal.HeldBy, bool) {
	for range heldByDepth {
		if p.pid <= 1 || p.ticks == 0 {
			break
		}
		if hb, ok := idx[p]; ok {
			return hb, true
		}
		st, err := runner.ReadProcStat(p.pid)
		if err != nil || st.StartTicks != p.ticks || st.Ppid <= 1 {
			break
		}
		p = procID{st.Ppid, runner.StartTicks(st.Ppid)}
	}
	return journal.HeldBy{}, false
}

// heldBy is who holds: at most journal.MaxHeldBy of the holders (each
// pid once; a holder not visible here, pid 0, is left out), and how many
// more there were. Command lines are kept only where /proc shows them to
// every user (lockfile.CommandsShownToAll, HideCommands' rule): the
// journal is world-readable.
func heldBy(stateDir, self string, hs []lockfile.Holder) ([]journal.HeldBy, int) {
	var out []journal.HeldBy
	more := 0
	seen := map[int]bool{}
	var idx runIndex
	showAll := false
	for _, h := range hs {
		if h.Pid <= 0 || seen[h.Pid] {
			continue
		}
		seen[h.Pid] = true
		if len(out) == journal.MaxHeldBy {
			more++
			continue
		}
		if idx == nil {
			idx = readRunIndex(stateDir, self)
			showAll = lockfile.CommandsShownToAll()
		}
		hb := journal.HeldBy{Pid: h.Pid, PidStart: runner.StartTicks(h.Pid)}
		if showAll {
			hb.Command = h.Command
		}
		if r, ok := idx.runOf(procID{h.Pid, hb.PidStart}); ok {
			hb.Gate, hb.Run = r.Gate, r.Run
		}
		out = append(out, hb)
	}
	return out, more
}

// lockHolders are the holders of a busy run's lock files now, from one
// read of /proc/locks (lookup's table).
func lockHolders(locks []journal.Lock) []lockfile.Holder {
	var l lookup
	var hs []lockfile.Holder
	for _, lk := range locks {
		if _, h, err := l.locks().HoldersOf(lk.File); err == nil {
			hs = append(hs, h...)
		}
	}
	return hs
}

// legacyHolders are the processes a legacy skip found: a lock's holders,
// or the live process a pidfile names.
func legacyHolders(f *LegacyFound) []lockfile.Holder {
	if f.Kind == LegacyPidfileFile {
		return []lockfile.Holder{{Pid: f.Pid, Command: f.Command}}
	}
	return f.Holders
}

// recordHeldBy sets rec's holders: who held hs, looked up now.
func (r *run) recordHeldBy(rec *journal.Record, hs []lockfile.Holder) {
	if len(hs) == 0 {
		return
	}
	rec.HeldBy, rec.HeldByMore = heldBy(StateDirFor(r.cfg), r.id, hs)
}
