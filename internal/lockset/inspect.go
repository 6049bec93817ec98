//go:build linux

package lockset

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
	"github.com/crongate/crongate/slots"
)

// Inspector is a Backend that can say, without taking or waiting for
// anything, who holds the locks and slots a request would take (withlock
// who). Its answer can be stale by the time it is read.
type Inspector interface {
	Inspect(Request) (*Inspection, error)
}

// States of a path or a slot in an Inspection.
const (
	StateHeld    = "held"
	StateFree    = "free"
	StateUnknown = "unknown" // cannot be told (Error says why)
)

// Inspection is what an Inspector found: every path, in request order,
// and every pool; and the earlier waiter withlock would yield to, if any.
type Inspection struct {
	Paths  []PathState
	Pools  []PoolState
	Queued *QueuedState
	// QueueUnused says why the waiting queue cannot be used (a file
	// planted as the queue dir, say): withlock then waits unqueued, and
	// nothing is unknown for it.
	QueueUnused string
}

// QueuedState is a waiter in the fair-waiting queue that a withlock with
// the request would yield to now: one whose set intersects the request's
// paths, or whose reservations leave none of a pool's free slots to it.
type QueuedState struct {
	Ticket string     // its ticket (local) or queue key (etcd)
	Pool   string     // the pool's template, when it reserves its free slots; "" when queued for paths
	Waiter HolderInfo // who waits: the ticket's lock holder (local), its key's value (etcd)
}

// PathState is one path of a request.
type PathState struct {
	Given     string // as the request named it
	Canonical string // the Python rule's form (pathlock.Canonical)
	Lock      string // where its lock lives: the lock file, or the backend's key
	State     string // StateHeld, StateFree, StateUnknown
	Holders   []HolderInfo
	Error     string
}

// PoolState is one slot pool of a request: Busy when every slot is held
// (withlock would skip).
type PoolState struct {
	Template string
	Size     int
	Slots    []SlotState
	Busy     bool
}

// Free counts the pool's free slots.
func (p PoolState) Free() int {
	n := 0
	for _, s := range p.Slots {
		if s.State == StateFree {
			n++
		}
	}
	return n
}

// SlotState is one slot of a pool.
type SlotState struct {
	Slot    int
	Lock    string // the slot file, or the backend's key
	State   string
	Holders []HolderInfo
	Error   string
}

// HolderInfo is who holds a lock, as far as the backend can tell.
type HolderInfo struct {
	Pid           int       // 0: not visible here
	Host          string    // the host, when the backend knows it (etcd)
	Command       string    // neutralised, cut
	Started       time.Time // the process's start (local: /proc); zero: unknown
	Since         time.Time // when the lock was taken, when the backend records it (etcd); zero: unknown
	Shared        bool
	InheritedFrom int // the pid that placed the lock and exited
}

// Busy reports whether withlock would skip the request now: a path held,
// a pool with no free slot, or an earlier waiter it would yield to.
func (in *Inspection) Busy() bool {
	if in.Queued != nil {
		return true
	}
	for _, p := range in.Paths {
		if p.State == StateHeld {
			return true
		}
	}
	for _, p := range in.Pools {
		if p.Busy {
			return true
		}
	}
	return false
}

// Unknown reports whether something could not be told.
func (in *Inspection) Unknown() bool {
	for _, p := range in.Paths {
		if p.State == StateUnknown {
			return true
		}
	}
	for _, p := range in.Pools {
		for _, s := range p.Slots {
			if s.State == StateUnknown {
				return true
			}
		}
	}
	return false
}

// Inspect implements Inspector for the local backend: each path's lock
// file (LockDir/sha256(canonical).lock, never created or opened) and
// each slot file are looked up in one reading of /proc/locks
// (lockfile.LockTable). A missing lock file is free.
func (b Local) Inspect(r Request) (*Inspection, error) {
	t := lockfile.ReadLockTable()
	in := &Inspection{}
	dir := b.LockDir
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	for _, p := range r.Paths {
		c, err := pathlock.Canonical(p)
		if err != nil {
			return nil, err
		}
		ps := PathState{Given: p, Canonical: c, Lock: filepath.Join(dir, pathlock.LockName(c))}
		ps.State, ps.Holders, ps.Error = localState(t, ps.Lock)
		in.Paths = append(in.Paths, ps)
	}
	for _, spec := range r.Pools {
		if err := slots.Check(spec.Size, spec.Template); err != nil {
			return nil, err
		}
		tmpl := spec.Template
		if a, err := filepath.Abs(tmpl); err == nil {
			tmpl = a
		}
		pool := PoolState{Template: tmpl, Size: spec.Size, Busy: true}
		for i := 0; i < spec.Size; i++ {
			s := SlotState{Slot: i, Lock: SlotFile(tmpl, i)}
			s.State, s.Holders, s.Error = localState(t, s.Lock)
			pool.Busy = pool.Busy && s.State == StateHeld
			pool.Slots = append(pool.Slots, s)
		}
		in.Pools = append(in.Pools, pool)
	}
	in.Queued, in.QueueUnused = localQueued(t, b.LockDir, in)
	return in, nil
}

// localQueued reads the queue of lockDir, without writing anything (a
// dead ticket is passed over, not removed) and without taking a lock
// (liveness comes from t, /proc/locks), and returns the earliest waiter a
// withlock with the request in would yield to (queue_linux.go, ahead),
// nil if none or if there is no queue to read; and why the queue cannot be
// used, if so (withlock then waits unqueued too). It keeps of the tickets
// only the names of the request's locks.
func localQueued(t *lockfile.LockTable, lockDir string, in *Inspection) (*QueuedState, string) {
	if !t.Readable() || lockDir == "" {
		return nil, ""
	}
	dir, err := lockfile.OpenDir(lockDir, false)
	if err != nil {
		return nil, "" // no lock dir: no queue (withlock would create both)
	}
	defer dir.Close()
	q := newQueue(dir, nil)
	q.table = t
	q.keep = map[string]bool{}
	for _, p := range in.Paths {
		q.keep[filepath.Base(p.Lock)] = true
	}
	q.keepPools = map[string]bool{}
	for _, p := range in.Pools {
		if key, ok := poolKeyOf(SlotFile(p.Template, 0)); ok {
			q.keepPools[key] = true
		}
	}
	ws := q.waiting()
	defer q.close()
	if len(ws) == 0 {
		return nil, q.note
	}
	found := func(ticket, pool string) *QueuedState {
		s := &QueuedState{Ticket: q.dir.Join(ticket), Pool: pool}
		if _, hs, err := t.HoldersOf(s.Ticket); err == nil && len(hs) > 0 {
			s.Waiter = HolderInfo{Pid: hs[0].Pid, Command: hs[0].Command, Started: hs[0].Started}
		}
		return s
	}
	for _, w := range ws {
		for _, p := range in.Paths {
			if w.names[filepath.Base(p.Lock)] {
				return found(w.name, ""), ""
			}
		}
	}
	for _, p := range in.Pools {
		key, ok := poolKeyOf(SlotFile(p.Template, 0))
		if !ok {
			continue // no slot file yet: nobody has waited for this pool
		}
		reserved, first := 0, ""
		for _, w := range ws {
			if n := w.pools[key]; n > 0 {
				reserved += n
				if first == "" {
					first = w.name
				}
			}
		}
		if reserved > 0 && p.Free() <= reserved {
			return found(first, p.Template), ""
		}
	}
	return nil, ""
}

// poolKeyOf is the queue's name of the pool whose first slot file is
// first (slots.Pool.Key, as a ticket line), read without opening it.
func poolKeyOf(first string) (string, bool) {
	var st unix.Stat_t
	if unix.Lstat(first, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", false
	}
	return fmt.Sprintf("%s%d:%d", poolLine, uint64(st.Dev), uint64(st.Ino)), true
}

// SlotFile is the file of slot i of the pool named by template.
func SlotFile(template string, i int) string {
	dir, base := filepath.Split(template)
	return dir + strings.ReplaceAll(base, slots.Placeholder, strconv.Itoa(i))
}

func localState(t *lockfile.LockTable, file string) (string, []HolderInfo, string) {
	_, hs, err := t.HoldersOf(file)
	switch {
	case err != nil:
		return StateUnknown, nil, err.Error()
	case !t.Readable():
		return StateUnknown, nil, fmt.Sprintf("/proc/locks cannot be read here, so the holder of %s cannot be told", file)
	case len(hs) == 0:
		return StateFree, nil, ""
	}
	out := make([]HolderInfo, len(hs))
	for i, h := range hs {
		out[i] = HolderInfo{Pid: h.Pid, Command: h.Command, Started: h.Started, Shared: h.Shared}
		if h.Exited && h.PlacedBy > 0 {
			out[i].InheritedFrom = h.PlacedBy
		}
	}
	return StateHeld, out, ""
}
