//go:build linux

package crongate

import (
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/withlock"
)

// BusyLocks is gate.Invocation.Locks for both cron-gate binaries: the
// locks of a command line that runs a local withlock (withlock.LineTargets,
// read as withlock would run it now: in the job's working directory and
// environment), at most journal.MaxLocks of them. It runs only after a
// command exited with the skip code: the per-tick path of a run that ran
// pays nothing.
//
// Why cron-gate and not withlock says which locks were busy: withlock's
// only channel back is its exit code (75) and its stderr, which belongs
// to the job's owner (cron mails it); cron-gate reads the same command
// line withlock read, in the same directory and environment, and records
// every lock it takes, so that status looks up each one's holder when it
// is read, not only the first one withlock found busy.
func BusyLocks(argv []string) ([]journal.Lock, int) {
	ts, more := withlock.LineTargets(argv, journal.MaxLocks)
	if len(ts) == 0 {
		return nil, 0
	}
	out := make([]journal.Lock, len(ts))
	for i, t := range ts {
		out[i] = journal.Lock{Path: t.Path, Pool: t.Pool, File: t.File}
	}
	return out, more
}
