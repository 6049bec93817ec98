//go:build linux

package lockset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
	"github.com/crongate/crongate/slots"
)

// OpenFirstOf implements FirstOfBackend: every set is canonicalised now
// (a bad path in any set is an error before anything is taken), the lock
// dir is opened once for all of them.
func (b Local) OpenFirstOf(pools []PoolSpec, sets [][]string) (FirstOfClaim, error) {
	c := &localFirst{chosen: -1}
	canon, err := pathlock.CanonicalSets(sets)
	if err != nil {
		return nil, err
	}
	biggest := 0
	for _, cs := range canon {
		biggest = max(biggest, len(cs))
	}
	// Only one set is open at a time (a busy one is closed before the next
	// is tried), so the descriptors needed are the largest set's.
	if err := checkFileLimit(biggest + len(pools)); err != nil {
		return nil, err
	}
	dir, err := lockfile.OpenDir(b.LockDir, true)
	if err != nil {
		return nil, err
	}
	c.dir = dir
	dir.Reserve(biggest + len(pools))
	for _, cs := range canon {
		c.sets = append(c.sets, pathlock.NewSet(dir, cs))
	}
	// A waiter queues for its first set (the caller's first choice), so
	// that later sets that intersect it yield to it; it still takes any
	// other set the moment that one is free.
	var first []string
	if len(c.sets) > 0 {
		_, first = c.sets[0].Watch()
	}
	c.q = newQueue(dir, first)
	// Of the tickets, waiting keeps only the names of our sets.
	c.q.keep = map[string]bool{}
	for _, s := range c.sets {
		_, names := s.Watch()
		for _, n := range names {
			c.q.keep[n] = true
		}
	}
	if c.pools, err = openPools(pools); err != nil {
		c.Close()
		return nil, err
	}
	c.q.pools = c.pools
	return c, nil
}

// localFirst is the local FirstOfClaim.
type localFirst struct {
	dir    *lockfile.Dir
	sets   []*pathlock.Set
	pools  []*slots.Pool
	chosen int // the set held, -1 if none
	// busyPool is the pool that was full in the last attempt, -1 if the
	// sets were all busy; busyNames its slot files that others hold.
	busyPool  int
	busyNames []string
	w         *watcher
	q         *queue // a waiter's ticket names its first set
	// While waiting (keep), a set's busy lock file stays open between
	// attempts and blockers names them: closing it would wake every
	// first-of waiter that watches it, this one included, and they
	// would wake each other without end. A waiter is woken by the close
	// of a blocker only (a release), not of files it took and gave back
	// in an attempt. keep is false until the first WaitChange, and when
	// the descriptors needed would pass the open-file limit (the waiter
	// then wakes at each Poll only).
	keep     bool
	blockers []string
	// The waiter also waits in flock(2) on one blocker, the first
	// set's that has one (through a duplicate of the set's descriptor,
	// as a plain claim does: waitLock), so that a release by LOCK_UN,
	// which inotify does not report, wakes it too. block is that file
	// (blockSet its set) after an attempt; blocked the outstanding call
	// (blockedOn, blockedSet); got, gotSet the file a completed call
	// locked, which the next attempt uses or lets go.
	block, blockedOn, got        *lockfile.Lock
	blockSet, blockedSet, gotSet int
	blocked                      chan error
	noBlock                      bool // flock(2) could not wait: inotify and Poll only
}

func (c *localFirst) TryAcquire() (Held, error) {
	if c.chosen >= 0 {
		return nil, errors.New("lockset: first-of claim already held")
	}
	h, err := c.tryAcquire()
	if err != nil {
		// A waiter reserves a slot of each pool it waits for (setReserve).
		c.q.setReserve(c.busyPool)
	}
	c.collect()
	if c.got != nil && c.gotSet != c.chosen {
		// A path a flock(2) wait got is not ours to keep unless its set
		// was taken: nothing is held while waiting, or beside the set
		// that runs.
		c.sets[c.gotSet].Drop(c.got)
	}
	c.got = nil
	if c.chosen >= 0 && c.blocked != nil && c.blockedSet != c.chosen {
		// A call still blocked for another set: closing that set's
		// descriptor leaves the call's duplicate the last one, so a
		// lock it gets later goes at once when the call closes it.
		c.sets[c.blockedSet].Drop(c.blockedOn)
	}
	return h, err
}

// collect takes the result of a completed flock(2) wait, if any.
func (c *localFirst) collect() {
	if c.blocked == nil {
		return
	}
	select {
	case err := <-c.blocked:
		if err == nil {
			c.got, c.gotSet = c.blockedOn, c.blockedSet
		} else {
			c.noBlock = true // a file system that refuses to wait in flock(2)
		}
		c.blocked, c.blockedOn = nil, nil
	default:
	}
}

func (c *localFirst) tryAcquire() (Held, error) {
	// A set that intersects a waiting set is left to its waiter (fair
	// waiting), as a plain claim's is, and so are the slots that earlier
	// waiters reserve.
	waiting := c.q.waiting()
	if err := c.q.poolBusy(waiting); err != nil {
		c.busyPool = err.(*QueuedError).pool // WaitChange watches it
		_, c.busyNames = c.pools[c.busyPool].Watch()
		return nil, err
	}
	for i, p := range c.pools {
		if _, err := p.TryLock(); err != nil {
			c.busyNames = othersHold(c.pools, i)
			c.releaseSlots()
			c.busyPool = i
			return nil, err
		}
	}
	c.busyPool = -1
	var first BusyError
	c.blockers = c.blockers[:0]
	c.block = nil
	for i, s := range c.sets {
		var err error
		if len(waiting) > 0 {
			_, names := s.Watch()
			err = c.q.busyFor(waiting, names)
		}
		if err == nil {
			err = s.TryLock()
		}
		if err == nil {
			c.chosen = i
			return c, nil
		}
		// Nothing of s is held now (TryLock's rule); close the files it
		// opened too, so that a long queue costs the descriptors of one
		// set, not of all of them; but a waiter keeps a busy file open.
		var lbe *lockfile.BusyError
		if c.keep && errors.As(err, &lbe) {
			c.blockers = append(c.blockers, filepath.Base(lbe.LockPath))
			if c.block == nil {
				c.block, c.blockSet = s.Busy(), i
			}
		} else {
			s.Close()
		}
		be, ok := errors.AsType[BusyError](err)
		if !ok {
			c.releaseSlots()
			return nil, err
		}
		if first == nil {
			first = be
		}
	}
	c.releaseSlots()
	return nil, &AllBusyError{Sets: len(c.sets), First: first}
}

func (c *localFirst) releaseSlots() {
	for _, p := range c.pools {
		p.Release()
	}
}

// Candidate implements FirstOfClaim.
func (c *localFirst) Candidate() int { return c.chosen }

func (c *localFirst) Paths() []string {
	if c.chosen < 0 {
		return []string{}
	}
	return c.sets[c.chosen].Paths()
}

func (c *localFirst) Slots() []int {
	s := make([]int, len(c.pools))
	for i, p := range c.pools {
		s[i] = p.Index()
	}
	return s
}

func (c *localFirst) Files() []*os.File {
	var fs []*os.File
	for _, p := range c.pools {
		if l := p.Held(); l != nil {
			fs = append(fs, l.File())
		}
	}
	if c.chosen >= 0 {
		for _, l := range c.sets[c.chosen].Files() {
			fs = append(fs, l.File())
		}
	}
	return fs
}

func (c *localFirst) Lost() <-chan struct{} { return nil }

// Started leaves the queue once the command has started (off the path
// from a release to the command running, as a plain claim's Started).
func (c *localFirst) Started() { c.q.leave() }

// Notes implements Noted: the queue's.
func (c *localFirst) Notes() []string { return c.q.Notes() }

func (c *localFirst) Release() {
	c.q.leave()
	c.releaseSlots()
	if c.chosen >= 0 {
		c.sets[c.chosen].Release()
		c.chosen = -1
	}
}

func (c *localFirst) Close() {
	c.Release()
	for _, p := range c.pools {
		p.Close()
	}
	for _, s := range c.sets {
		s.Close()
	}
	if c.dir != nil {
		c.dir.Close()
	}
	if c.w != nil {
		c.w.close()
	}
	c.q.close()
}

// WaitChange implements Claim: a full pool is watched as by a plain
// claim; when every set was busy, the close of a file that made a set busy
// (a release: the waiter keeps its own descriptors of those open) wakes
// the waiter, or a waiter leaving the queue, or at most poll passes.
func (c *localFirst) WaitChange(ctx context.Context, poll time.Duration) error {
	if c.w == nil {
		// A waiter: a ticket for the first set (OpenFirstOf), taken
		// and kept as a plain claim's (WaitChange in watch_linux.go).
		c.q.enter()
		dirs := []string{c.dir.Path}
		if c.q.dir != nil {
			dirs = append(dirs, c.q.dir.Path)
		}
		for _, p := range c.pools {
			d, _ := p.Watch()
			dirs = append(dirs, d)
		}
		c.w = newWatcher(dirs)
		// One busy file per set kept open, besides the largest set and
		// the slots being tried.
		biggest := 0
		for _, s := range c.sets {
			_, n := s.Watch()
			biggest = max(biggest, len(n))
		}
		c.keep = checkFileLimit(len(c.sets)+biggest+len(c.pools)) == nil
		return ctx.Err()
	}
	if c.busyPool >= 0 && c.busyPool < len(c.pools) {
		dir, _ := c.pools[c.busyPool].Watch()
		c.w.want(dir, c.busyNames)
	} else {
		// The blockers of the last attempt (none when not keeping: its
		// own closes would wake it; Poll then).
		c.w.want(filepath.Clean(c.dir.Path), c.blockers)
		if c.blocked == nil && c.block != nil && !c.noBlock {
			c.startBlock()
		}
	}
	if c.q.dir != nil {
		// A waiter leaving the queue may leave a set to us.
		c.w.alsoAny(c.q.dir.Path)
	}
	err := c.w.wait(ctx, poll)
	c.collect()
	return err
}

// startBlock starts a flock(2) wait on c.block, on a duplicate of its
// descriptor, which wakes the watcher's wait when it returns. A call that
// fails (a file system that refuses to wait in flock) is not tried again.
func (c *localFirst) startBlock() {
	done, err := flockWait(c.block, c.w.kick)
	if err != nil {
		c.noBlock = true
		return
	}
	c.blocked, c.blockedOn, c.blockedSet = done, c.block, c.blockSet
}

var _ FirstOfBackend = Local{}
