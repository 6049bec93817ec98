//go:build linux

package lockset

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
	"github.com/crongate/crongate/slots"
)

// Local is the flock backend: path locks in LockDir named by the Python
// rule (pathlock), and slot pools as files (slots), all on this host.
type Local struct {
	LockDir string
}

// DefaultSlotTemplate is the slot file template for a pool given without
// one, inside the lock dir.
const DefaultSlotTemplate = "withlock-slot-{i}.lock"

// Open canonicalises the paths, opens the lock dir and the pools' dirs
// (creating missing ones), and returns a claim. Nothing is locked yet.
func (b Local) Open(r Request) (Claim, error) {
	canon, err := pathlock.CanonicalSet(r.Paths)
	if err != nil {
		return nil, err
	}
	if err := checkFileLimit(len(canon) + len(r.Pools)); err != nil {
		return nil, err
	}
	c := &localClaim{}
	if len(canon) > 0 {
		dir, err := lockfile.OpenDir(b.LockDir, true)
		if err != nil {
			return nil, err
		}
		c.dir = dir
		dir.Reserve(len(canon) + len(r.Pools))
		c.paths = pathlock.NewSet(dir, canon)
		_, names := c.paths.Watch()
		c.q = newQueue(dir, names)
	}
	if c.pools, err = openPools(r.Pools); err != nil {
		c.Close()
		return nil, err
	}
	if len(c.pools) > 0 && c.q == nil && b.LockDir != "" {
		// Slots alone: the queue is still the lock dir's. If it cannot
		// be opened, the pools wait unqueued, as before fair waiting.
		if dir, err := lockfile.OpenDir(b.LockDir, true); err == nil {
			c.qdir = dir
			c.q = newQueue(dir, nil)
		}
	}
	if c.q != nil {
		c.q.pools = c.pools
	}
	return c, nil
}

// openPools opens the slot pools of specs, in order (creating their
// files); on an error it closes what it opened.
func openPools(specs []PoolSpec) ([]*slots.Pool, error) {
	pools := make([]*slots.Pool, 0, len(specs))
	for _, ps := range specs {
		p, err := slots.Open(ps.Size, ps.Template, true)
		if err != nil {
			for _, o := range pools {
				o.Close()
			}
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

type localClaim struct {
	dir   *lockfile.Dir
	paths *pathlock.Set
	pools []*slots.Pool
	// busy names what failed last: a pool index, or -1 for the paths;
	// busyNames, for a pool, its slot files that others hold (othersHold).
	busyPool  int
	busyNames []string
	busyLock  string // lock file path of the busy path
	w         *watcher
	q         *queue        // the waiting queue (nil without paths or pools)
	qdir      *lockfile.Dir // the lock dir of a claim with pools only, for q
	// blocked receives the result of the flock(2) call waiting for
	// blockedOn, the busy lock file (waitLock); nil if none is outstanding.
	blocked   chan error
	blockedOn *lockfile.Lock
	// got is the file a completed flock(2) wait locked (the set's own
	// descriptor): if the attempt after it fails, on another path, it
	// is closed, so that nothing is held while waiting.
	got     *lockfile.Lock
	noBlock bool // flock(2) failed to wait once: inotify only
}

// TryAcquire yields to an earlier waiter whose set intersects ours (the
// queue: QueuedError), then takes the slots first (as the Python
// classifier does: a process without a slot touches no post), then the
// paths in sorted order. Once it holds them it leaves the queue: in
// Started, after the command has started (a ticket left in place a moment
// longer makes only sets that intersect ours yield, and those are busy
// anyway), or in Release.
func (c *localClaim) TryAcquire() (Held, error) {
	h, err := c.tryAcquire()
	if err != nil && c.q != nil {
		// A waiter reserves a slot of each pool it waits for (setReserve).
		c.q.setReserve(c.busyPool)
	}
	if err != nil && c.got != nil {
		// The path a flock(2) wait got, locked on the set's own
		// descriptor, is not ours to keep while another part of the set
		// is busy (a holder outside the queue, such as a Python worker,
		// took an earlier path meanwhile).
		c.paths.Drop(c.got)
	}
	c.got = nil
	return h, err
}

func (c *localClaim) tryAcquire() (Held, error) {
	if c.q != nil {
		if err := c.q.ahead(); err != nil {
			// Queued for paths (-2: WaitChange watches the queue), or
			// for a pool's slots (the pool and the queue).
			c.busyPool = -2
			if qe, ok := errors.AsType[*QueuedError](err); ok {
				c.busyPool = qe.pool
				if qe.pool >= 0 {
					_, c.busyNames = c.pools[qe.pool].Watch()
				}
			}
			return nil, err
		}
	}
	for i, p := range c.pools {
		if _, err := p.TryLock(); err != nil {
			c.busyNames = othersHold(c.pools, i)
			c.releaseAll()
			c.busyPool = i
			return nil, err
		}
	}
	if c.paths != nil {
		if err := c.paths.TryLock(); err != nil {
			c.releaseAll()
			c.busyPool = -1
			var be *lockfile.BusyError
			if errors.As(err, &be) {
				c.busyLock = be.LockPath
			}
			return nil, err
		}
	}
	return c, nil
}

// Notes implements Noted: the queue's.
func (c *localClaim) Notes() []string { return c.q.Notes() }

// Started leaves the queue (TryAcquire).
func (c *localClaim) Started() {
	if c.q != nil {
		c.q.leave()
	}
}

func (c *localClaim) releaseAll() {
	for _, p := range c.pools {
		p.Release()
	}
	if c.paths != nil {
		c.paths.Release()
	}
}

func (c *localClaim) Paths() []string {
	if c.paths == nil {
		return []string{}
	}
	return c.paths.Paths()
}

func (c *localClaim) Slots() []int {
	s := make([]int, len(c.pools))
	for i, p := range c.pools {
		s[i] = p.Index()
	}
	return s
}

func (c *localClaim) Files() []*os.File {
	var fs []*os.File
	for _, p := range c.pools {
		if l := p.Held(); l != nil {
			fs = append(fs, l.File())
		}
	}
	if c.paths != nil {
		for _, l := range c.paths.Files() {
			fs = append(fs, l.File())
		}
	}
	return fs
}

func (c *localClaim) Lost() <-chan struct{} { return nil }

func (c *localClaim) Release() {
	c.Started()
	c.releaseAll()
}

func (c *localClaim) Close() {
	for _, p := range c.pools {
		p.Close()
	}
	if c.paths != nil {
		c.paths.Close()
	}
	if c.dir != nil {
		c.dir.Close()
	}
	if c.w != nil {
		c.w.close()
	}
	if c.q != nil {
		c.q.close()
	}
	if c.qdir != nil {
		c.qdir.Close()
	}
}

// checkFileLimit refuses, before anything is taken, a set that cannot be
// held: every lock is an open file, in withlock and again in the command.
// It counts the set after deduplication. (Go has already raised the soft
// limit to the hard one.)
func checkFileLimit(n int) error {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return nil
	}
	if need := uint64(n) + 16; need > rl.Cur {
		return fmt.Errorf("%d locks need %d open files, but the limit is %d; raise it (ulimit -Hn) or split the set", n, need, rl.Cur)
	}
	return nil
}

// othersHold returns the slot files of pools[i], which was found full,
// that other processes hold: all of them but those that pools before it
// in the request, naming the same files (one --slot-file given twice),
// took in this very attempt. A waiter watches only those: the release of
// the slots it takes and gives back itself must not wake it (it would try
// again at once, and again: a spin).
func othersHold(pools []*slots.Pool, i int) []string {
	dir, names := pools[i].Watch()
	mine := map[string]bool{}
	for _, p := range pools[:i] {
		if d, n := p.Watch(); d == dir && p.Index() >= 0 {
			mine[n[p.Index()]] = true
		}
	}
	if len(mine) == 0 {
		return names
	}
	var others []string
	for _, n := range names {
		if !mine[n] {
			others = append(others, n)
		}
	}
	return others
}
