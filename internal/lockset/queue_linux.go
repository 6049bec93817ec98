//go:build linux

package lockset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/slots"
)

// The waiting queue of the local backend (docs/withlock.md, "Fair
// waiting"). A withlock that waits (--wait) for a path set puts a ticket
// in QueueDir under the lock dir: a file named by its arrival time and
// PID, listing the lock file names of its set, and holding an exclusive
// flock on it for as long as it waits. Every withlock, before it tries a
// set, reads the queue: a live ticket that arrived earlier (every live
// ticket, for one that has none) and names a lock of its set makes the
// set busy, so a newcomer whose set intersects an earlier waiter's yields
// to it, while sets that intersect no waiter's proceed at once.
//
// Slot pools are queued too: a ticket also lists, one line "slots:KEY F"
// per pool its waiter takes (KEY: slots.Pool.Key), where the flag F is
// "+" while the waiter reserves a slot of that pool — an attempt found
// that pool full, or earlier waiters queued for it, and the waiter has
// waited for slots only since — and "-" otherwise (it waits for a path);
// the waiter flips it in place, one byte, after each attempt
// (setReserve). A withlock yields when a pool
// of its request has no more free slots than earlier live tickets reserve
// (the free slots counted in /proc/locks, never probed with flock(2): a
// probe would make another process's try see a free slot busy).
//
// A ticket is live exactly while its flock is held: it is locked before it
// is renamed into place, and its owner removes it once it holds its locks
// or stops waiting. A waiter that dies (SIGKILL) leaves a ticket nobody
// holds, which every reader ignores (and removes, a few per scan, where
// it may). Lock files are never touched by the queue. Python holders take
// no part: they neither read nor write tickets.
//
// What a reader pays does not grow with dead tickets (docs/withlock.md,
// "Fair waiting"): every waiter, from before its ticket is in place until
// after it is gone, holds an OFD read lock on the queue dir (the mark); a
// reader that finds no such lock (F_OFD_GETLK, which takes nothing) knows
// there is no live ticket and does not list the dir. When there is a
// mark, the reader lists the dir once (getdents) and opens only the
// tickets that /proc/locks shows flocked exclusively. A directory cannot
// be opened for writing, so nobody can hold a write lock on it that would
// keep a waiter from marking.
//
// The queue is a courtesy among waiters, never a condition of running: a
// withlock-queue that this user cannot use (a file, FIFO or symlink
// planted there, another user's dir it may not write, a full disk) leaves
// waiting unqueued, said under -v (Notes); exclusion never depends on it.
const QueueDir = "withlock-queue"

// maxTicket bounds a ticket: what a reader reads of one (the rest is
// ignored), in one buffer reused for every ticket of a scan, and what a
// waiter writes (its pool lines, then as many of its lock names, sorted,
// as fit: about 15,000; a larger set queues for those).
const maxTicket = 1 << 20

// prunePerScan bounds the dead tickets a scan tries to remove (open,
// probe, unlink), so that a queue dir full of another user's dead tickets,
// which this user may not remove (sticky), costs each scan the same.
const prunePerScan = 16

// ticketPrefix starts every ticket name; the temporary names start with
// "tmp-" and are never read as tickets.
const ticketPrefix = "t-"

// queue is one process's view of the waiting queue of a lock dir.
type queue struct {
	lockDir *lockfile.Dir
	dir     *safeopen.Dir // nil until opened (or if the dir does not exist)
	names   map[string]bool
	// pools are the claim's slot pools, keys their queue names (""
	// where a pool's first file could not be opened: that pool is not
	// queued), filled by poolKeys. reserve[i]: pool i's flag as it
	// should be; flagAt[i]: the offset of its flag in our ticket (0: no
	// line).
	pools   []*slots.Pool
	keys    []string
	reserve []bool
	flagAt  []int64
	ticket  string   // our ticket's name, "" if we have none
	f       *os.File // our ticket, flocked
	// clear: a scan with our ticket in place found no earlier live
	// ticket that intersects our set. None can appear later: a ticket's
	// name is its arrival time, so a later waiter's sorts after ours (a
	// wall clock stepped back breaks only this ordering: the two then
	// contend as without a queue). So ahead is not read again on every
	// wake-up, the path from a release to the command running. A
	// scan that found an earlier ticket reserving one of our pools
	// does not clear: the free slots change without the queue.
	clear bool
	// table, when set, makes reading read-only (withlock who): a
	// ticket's liveness comes from it (/proc/locks: an exclusive flock,
	// what the probe below finds busy), and a dead ticket is passed over,
	// not probed with flock nor removed.
	table *lockfile.LockTable
	// keep, if set, is the lock names that waiting keeps of a ticket
	// (the rest are not stored: a reader's memory is bounded by its own
	// request, whatever the tickets list); nil keeps names.
	keep map[string]bool
	// keepPools, if set, is the pool lines (without flag) that parse
	// counts; nil counts our own pools' (poolKeys).
	keepPools map[string]bool
	// mark is our read descriptor of the queue dir, carrying the OFD read
	// lock that tells readers a waiter is in (-1: none).
	mark int
	// off: the queue cannot be used (note says why); waiting goes on
	// unqueued.
	off  bool
	note string
	buf  []byte // the ticket buffer, reused (maxTicket at most)
}

// poolLine is how a ticket lists a pool: a line that no lock file name
// can be (those are hex digits and ".lock").
const poolLine = "slots:"

// poolKeys returns the queue names of the claim's pools.
func (q *queue) poolKeys() []string {
	if q.keys == nil && len(q.pools) > 0 {
		q.keys = make([]string, len(q.pools))
		for i, p := range q.pools {
			if k, err := p.Key(); err == nil {
				q.keys[i] = poolLine + k
			}
		}
	}
	return q.keys
}

// queues reports whether the claim has anything to queue for.
func (q *queue) queues() bool { return len(q.names) > 0 || len(q.pools) > 0 }

func newQueue(lockDir *lockfile.Dir, names []string) *queue {
	q := &queue{lockDir: lockDir, names: make(map[string]bool, len(names)), mark: -1}
	for _, n := range names {
		q.names[n] = true
	}
	return q
}

// open opens the queue dir (creating it if create), and reports whether
// there is one to use. A dir that does not exist is no queue; anything
// else that keeps it from use turns the queue off (unusable).
func (q *queue) open(create bool) bool {
	if q.off {
		return false
	}
	if q.dir != nil {
		return true
	}
	// From the lock dir's descriptor: the queue belongs to the dir our
	// locks are in, even if that dir has since been removed or replaced.
	// Any owner: in a lock dir that several users share, the first
	// waiter creates it for all (lockfile.Dir.SubShared).
	d, err := q.lockDir.SubShared(QueueDir, "queue dir", create)
	if err != nil {
		if create || !errors.Is(err, fs.ErrNotExist) {
			q.unusable(err)
		}
		return false
	}
	q.dir = d
	return true
}

// unusable turns the queue off for this process: err says why (the note
// that -v shows). A waiter already in leaves. Fairness is lost with the
// queue, exclusion never.
func (q *queue) unusable(err error) {
	if q.off {
		return
	}
	q.leave()
	q.off = true
	q.note = err.Error()
}

// Notes says what -v reports of the queue: why it was not used, if so.
func (q *queue) Notes() []string {
	if q == nil || q.note == "" {
		return nil
	}
	return []string{"fair-waiting queue not used (a wait is unqueued): " + q.note}
}

// QueuedError is the contention error of a set that intersects the set of
// a waiter that arrived earlier: the set is left to it. It wraps ErrBusy
// and is a BusyError.
type QueuedError struct {
	Path string // the waiter's ticket
	PID  int
	// Pool is the template of the pool whose free slots the earlier
	// waiters reserve; "" when the waiter is queued for paths.
	Pool string
	pool int // its index in the claim's pools
}

func (e *QueuedError) Error() string {
	if e.Pool != "" {
		return fmt.Sprintf("an earlier waiter (pid %d, ticket %s) is queued for a slot of pool %s, and no other slot is free", e.PID, e.Path, e.Pool)
	}
	return fmt.Sprintf("an earlier waiter (pid %d, ticket %s) is queued for some of these paths", e.PID, e.Path)
}

func (e *QueuedError) Unwrap() error { return ErrBusy }

// FindHolders names the waiter by the process that holds its ticket
// locked (/proc/locks), not by the pid in the ticket's name, which any
// process that may write the queue dir chooses (a shared 1777 lock dir).
// A ticket whose holder cannot be seen keeps the name's pid.
func (e *QueuedError) FindHolders() {
	var st unix.Stat_t
	if unix.Lstat(e.Path, &st) != nil {
		return
	}
	if hs, err := lockfile.Holders(uint64(st.Dev), uint64(st.Ino)); err == nil && len(hs) > 0 && hs[0].Pid > 0 {
		e.PID = hs[0].Pid
	}
}

// ahead returns a QueuedError if a live ticket earlier than ours (any, if
// we have none) names one of our locks, or if the earlier tickets reserve
// as many slots of one of our pools as are free, or more. No queue (or an
// unusable one) means no waiter.
func (q *queue) ahead() error {
	if !q.queues() || q.clear {
		return nil
	}
	var ws []waiter
	var busy error
	q.scan(func(n string, data []byte) bool {
		if q.ticket != "" && n >= q.ticket {
			return false
		}
		if ticketIntersects(data, q.names) {
			pid, _ := ticketPID(n)
			busy = &QueuedError{Path: q.dir.Join(n), PID: pid, pool: -2}
			return false
		}
		if len(q.pools) > 0 {
			// A ticket with pool lines, even none reserved now ("-"),
			// may reserve one of ours after its waiter's next attempt.
			if w := q.parse(n, data, false); w.listsPools {
				ws = append(ws, w)
			}
		}
		return true
	})
	if busy == nil {
		busy = q.poolBusy(ws)
	}
	q.clear = busy == nil && q.ticket != "" && len(ws) == 0
	return busy
}

// poolBusy returns a QueuedError if the waiters ws reserve as many slots
// of one of our pools as are free, or more (one slot per line naming the
// pool with the flag "+" in a ticket); nil if not, or if the free slots
// cannot be counted (no /proc/locks: the pools are then not queued).
func (q *queue) poolBusy(ws []waiter) error {
	keys := q.poolKeys()
	var table *lockfile.LockTable
	for i, p := range q.pools {
		if keys[i] == "" {
			continue
		}
		reserved, first := 0, ""
		for _, w := range ws {
			n := w.pools[keys[i]]
			if n == 0 {
				continue
			}
			reserved += n
			if first == "" {
				first = w.name
			}
		}
		if reserved == 0 {
			continue
		}
		if table == nil {
			table = lockfile.ReadLockTable()
		}
		if free, ok := p.Free(table); ok && free <= reserved {
			pid, _ := ticketPID(first)
			return &QueuedError{Path: q.dir.Join(first), PID: pid, Pool: p.Template, pool: i}
		}
	}
	return nil
}

// waiting returns the live tickets that arrived before ours (every live
// ticket, if we have none), each with the lock names it lists (those in
// q.keep, if set), in arrival order (for --first-of, which checks every
// candidate set against them; its own ticket names its first set only).
func (q *queue) waiting() []waiter {
	var ws []waiter
	q.scan(func(n string, data []byte) bool {
		if q.ticket != "" && n >= q.ticket {
			return false
		}
		ws = append(ws, q.parse(n, data, true))
		return true
	})
	return ws
}

// waiter is a live ticket as waiting returns it: the lock names it lists,
// and how many slots of each pool it reserves.
type waiter struct {
	name       string
	names      map[string]bool
	pools      map[string]int
	listsPools bool // a pool line, reserved or not
}

// parse reads ticket n's lines: the pools it reserves a slot of (lines
// "slots:KEY +"; "-" reserves nothing), and the lock names if names is
// set (only those in q.keep, if set).
func (q *queue) parse(n string, data []byte, names bool) waiter {
	w := waiter{name: n}
	if names {
		w.names = map[string]bool{}
	}
	for l := range bytes.SplitSeq(data, []byte{'\n'}) {
		switch {
		case bytes.HasPrefix(l, []byte(poolLine)):
			w.listsPools = true
			if key, ok := bytes.CutSuffix(l, []byte(" +")); ok && q.keepsPool(key) {
				if w.pools == nil {
					w.pools = map[string]int{}
				}
				w.pools[string(key)]++
			}
		case names && len(l) > 0 && (q.keep == nil || q.keep[string(l)]) && !w.names[string(l)]:
			w.names[string(l)] = true
		}
	}
	return w
}

// keepsPool reports whether parse counts the pool line key: one of ours
// (or of keepPools, for who), so that what a reader stores of a ticket is
// bounded by its own request.
func (q *queue) keepsPool(key []byte) bool {
	if q.keepPools != nil {
		return q.keepPools[string(key)]
	}
	return slices.Contains(q.poolKeys(), string(key))
}

// setReserve sets the pool flags after a failed attempt: the pool at
// index busy (found full, or earlier waiters queued for it) reserves a
// slot from now on, as do the pools that reserved one already — a waiter
// for two pools that comes free in turn would otherwise see each taken by
// a newcomer while it waits for the other; none does once the waiter
// waits for a path (busy < 0: a path, or a waiter queued for one). With a
// ticket in place, a flag that changes is rewritten in place: one byte,
// which a reader sees either before or after.
func (q *queue) setReserve(busy int) {
	if len(q.pools) == 0 {
		return
	}
	if q.reserve == nil {
		q.reserve = make([]bool, len(q.pools))
	}
	keys := q.poolKeys()
	for i := range q.reserve {
		// Every occurrence of the full pool: the same --slot-file given
		// twice needs (and reserves) two of its slots.
		want := busy >= 0 && (keys[i] == keys[busy] || q.reserve[i])
		if want == q.reserve[i] {
			continue
		}
		q.reserve[i] = want
		if q.f != nil && q.flagAt[i] > 0 {
			q.f.WriteAt([]byte{flag(want)}, q.flagAt[i])
		}
	}
}

func flag(reserve bool) byte {
	if reserve {
		return '+'
	}
	return '-'
}

// busyFor returns a QueuedError if one of ws lists one of names.
func (q *queue) busyFor(ws []waiter, names []string) error {
	for _, w := range ws {
		for _, n := range names {
			if w.names[n] {
				pid, _ := ticketPID(w.name)
				return &QueuedError{Path: q.dir.Join(w.name), PID: pid, pool: -2}
			}
		}
	}
	return nil
}

// scan calls visit with each live ticket in name (arrival) order, with its
// content (valid until visit returns), until visit returns false. A queue
// dir that does not exist holds no ticket; one that this process cannot
// use turns the queue off (unusable): no ticket counts. Its cost does not
// grow with dead tickets: see QueueDir.
func (q *queue) scan(visit func(name string, data []byte) bool) {
	if !q.open(false) {
		return
	}
	fd, err := safeopen.IgnoringEINTRFd(func() (int, error) {
		return unix.Openat(q.dir.Fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			q.unusable(fmt.Errorf("queue dir %s: %w", q.dir.Path, err))
		}
		// ENOENT: the dir was removed under us (rm -rf of the lock dir):
		// it holds no waiter any more. Fairness is lost with it, as
		// exclusion is (docs/reliability.md); waiting goes on.
		return
	}
	defer unix.Close(fd)
	// Our own mark, if we have one, does not conflict with itself.
	probe := fd
	if q.mark >= 0 {
		probe = q.mark
	}
	if !marked(probe) {
		// No live ticket. Dead ones (their waiters killed) cost nothing
		// here; a few at the head of the dir are removed on the way.
		if q.table == nil {
			ents, _ := readEntries(fd, 4<<10, false)
			pruned := 0
			for _, e := range ents {
				if strings.HasPrefix(e.name, ticketPrefix) && pruned < prunePerScan {
					pruned++
					q.prune(e.name)
				}
			}
		}
		return
	}
	ents, err := readEntries(fd, 64<<10, true)
	if err != nil {
		q.unusable(fmt.Errorf("queue dir %s: %w", q.dir.Path, err))
		return
	}
	// Listed before /proc/locks is read: a ticket is flocked before it
	// is renamed into place, so a live one listed is in the table.
	table := q.table
	if table == nil {
		table = lockfile.ReadLockTable()
	}
	var live []string
	pruned := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.name, ticketPrefix) || e.name == q.ticket {
			continue
		}
		if table.Readable() && !table.LockedExclusive(0, e.ino) {
			// Dead (or held shared only, which the probe lets in).
			if q.table == nil && pruned < prunePerScan {
				pruned++
				q.prune(e.name)
			}
			continue
		}
		live = append(live, e.name)
	}
	slices.Sort(live)
	for _, n := range live {
		data, ok := q.read(n)
		if ok && !visit(n, data) {
			break
		}
	}
}

// marked reports whether a waiter holds the queue dir's mark (an OFD or
// POSIX read lock on it; QueueDir): a conflicting lock that F_OFD_GETLK
// finds through fd. A file system that cannot say counts as marked.
func marked(fd int) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
		return true
	}
	return lk.Type != unix.F_UNLCK
}

// entry is a directory entry: its name and inode.
type entry struct {
	name string
	ino  uint64
}

// readEntries lists the directory open at fd with each entry's inode
// (getdents64), so that tickets can be told live from /proc/locks
// without opening them: all of it, or (!all) what one call into a buffer
// of size bytes returns.
func readEntries(fd, size int, all bool) ([]entry, error) {
	var ents []entry
	buf := make([]byte, size)
	for first := true; first || all; first = false {
		n, err := safeopen.IgnoringEINTRFd(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return ents, nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name NUL-terminated.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			ents = append(ents, entry{name: string(name), ino: binary.NativeEndian.Uint64(b[0:8])})
			b = b[reclen:]
		}
	}
	return ents, nil
}

// prune removes ticket n if nobody holds it (its waiter has died), probing
// under our own shared flock so that no live owner can hold it meanwhile.
// Another user's, in a sticky dir, stays: only its owner may remove it.
func (q *queue) prune(n string) {
	f, err := q.dir.OpenFile(n, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == nil {
		unix.Unlinkat(q.dir.Fd(), n, 0)
	}
}

// read reads ticket n, at most maxTicket of it, into q.buf. ok is false
// if it is dead, gone, or not a regular file.
func (q *queue) read(n string) (data []byte, ok bool) {
	f, err := q.dir.OpenFile(n, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if q.table != nil {
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || !q.table.LockedExclusive(uint64(st.Dev), uint64(st.Ino)) {
			return nil, false
		}
	} else if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		// Nobody holds it: its waiter has died. Remove it (still under
		// our lock, so no live owner can be holding it).
		unix.Unlinkat(q.dir.Fd(), n, 0)
		return nil, false
	}
	if q.buf == nil {
		q.buf = make([]byte, maxTicket)
	}
	got, _ := io.ReadFull(f, q.buf)
	return q.buf[:got], true
}

// ticketIntersects reports whether the ticket data (lock file names, one
// per line) names one of names.
func ticketIntersects(data []byte, names map[string]bool) bool {
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if names[string(line)] {
			return true
		}
	}
	return false
}

// ticketPID reads the PID from a ticket name t-TIME-PID.
func ticketPID(name string) (int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(name[i+1:])
	return pid, err == nil && pid > 0
}

// enter puts our ticket in the queue (once): written and flocked under a
// temporary name, then renamed into place, so that a ticket is never
// visible unlocked while its waiter lives; the queue dir is marked first
// (QueueDir). A queue that cannot be used turns the queue off (unusable):
// the waiter waits unqueued.
func (q *queue) enter() {
	if q.f != nil || !q.queues() || !q.open(true) {
		return
	}
	if err := q.place(); err != nil {
		q.unusable(fmt.Errorf("queue dir %s: %w", q.dir.Path, err))
	}
}

func (q *queue) place() error {
	mark, err := safeopen.IgnoringEINTRFd(func() (int, error) {
		return unix.Openat(q.dir.Fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return err
	}
	// A file system without OFD locks: readers there cannot tell either
	// (marked), and list the dir every time.
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart}
	unix.FcntlFlock(uintptr(mark), unix.F_OFD_SETLK, &lk)
	q.mark = mark
	now := time.Now().UnixNano()
	pid := os.Getpid()
	tmp := fmt.Sprintf("tmp-%d-%d", pid, now)
	f, err := q.dir.OpenFile(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("ticket: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		unix.Unlinkat(q.dir.Fd(), tmp, 0)
		return fmt.Errorf("ticket %s: %w", tmp, err)
	}
	name := fmt.Sprintf("%s%020d-%d", ticketPrefix, now, pid)
	_, err = f.Write(q.ticketText())
	if err == nil {
		err = unix.Renameat(q.dir.Fd(), tmp, q.dir.Fd(), name)
	}
	if err != nil {
		f.Close()
		unix.Unlinkat(q.dir.Fd(), tmp, 0)
		return fmt.Errorf("ticket: %w", err)
	}
	q.f, q.ticket = f, name
	return nil
}

// ticketText is our ticket: the pool lines first (their flags at
// q.flagAt), then our lock names, sorted, as many as fit in maxTicket.
func (q *queue) ticketText() []byte {
	var b bytes.Buffer
	q.flagAt = make([]int64, len(q.pools))
	for i, k := range q.poolKeys() {
		if k != "" {
			b.WriteString(k)
			b.WriteByte(' ')
			q.flagAt[i] = int64(b.Len())
			b.WriteByte(flag(q.reserve != nil && q.reserve[i]))
			b.WriteByte('\n')
		}
	}
	for _, n := range slices.Sorted(maps.Keys(q.names)) {
		if b.Len()+len(n)+1 > maxTicket {
			break
		}
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// leave removes our ticket, if any, then our mark. The unlink comes before
// the close, so that nobody sees the ticket unlocked, nor a ticket without
// a mark.
func (q *queue) leave() {
	if q.f != nil {
		unix.Unlinkat(q.dir.Fd(), q.ticket, 0)
		q.f.Close()
		q.f, q.ticket, q.clear = nil, "", false
	}
	if q.mark >= 0 {
		unix.Close(q.mark)
		q.mark = -1
	}
}

func (q *queue) close() {
	q.leave()
	if q.dir != nil {
		q.dir.Close()
		q.dir = nil
	}
}
