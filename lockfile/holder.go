//go:build linux

package lockfile

// Finding who holds a flock, for error messages. Everything here is
// best-effort: /proc may be missing, unreadable or hidden (hidepid), other
// users' descriptors cannot be inspected, and the answer can be stale by the
// time it is shown.
//
// /proc/locks (fs/locks.c, lock_get_status) prints one line per lock:
//
//	2: FLOCK  ADVISORY  WRITE 2001 fe:00:7864554 0 EOF
//	2: -> FLOCK  ADVISORY  WRITE 2005 fe:00:7864554 0 EOF
//	2:  -> FLOCK  ADVISORY  READ 2007 fe:00:7864554 0 EOF
//	3: OFDLCK ADVISORY  WRITE -1 fe:00:9978542 0 EOF
//	4: POSIX  ADVISORY  READ 2002 fe:00:9978543 10 14
//
// ordinal, "->" for a waiter blocked on the lock with that ordinal (indented
// one more space per level of waiter blocked on a waiter), kind, mode
// (ADVISORY/MANDATORY, or ACTIVE/BREAKING/BREAKER for leases), READ/WRITE/
// UNLCK, pid, major:minor:inode of the superblock's s_dev (major and minor in
// hex, inode in decimal; "<none>:0" when there is no inode), range. The pid is
// the process that placed the lock, translated into the PID namespace of this
// /proc mount: -1 for OFD locks, and 0 when the placer is not visible there
// (outside the namespace, or exited when /proc is not the initial PID
// namespace's; in the initial namespace an exited placer's pid is still
// shown). /proc/PID/fdinfo/FD repeats the line, prefixed "lock:\t", for every
// descriptor sharing the open file description that holds a flock, so it tells
// exactly which processes keep a lock alive.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Holder is a process seen holding a lock. Pid is 0 when unknown (OFD lock,
// or a placing process outside this PID namespace).
type Holder struct {
	Pid     int
	Command string // sanitized: one line, control characters escaped, short
	Shared  bool   // a shared (LOCK_SH) lock
	// Exited is set when the process that placed the lock has exited (or no
	// longer has the file open) and the lock is kept by a descriptor it
	// passed on to a child. If that child was found, Pid and Command describe
	// it and PlacedBy is the pid that placed the lock; otherwise Pid is the
	// placing pid.
	Exited bool
	// PlacedBy is the pid /proc/locks gives for the lock, when it is not Pid
	// (see Exited); 0 otherwise or when unknown.
	PlacedBy int
	// Started is when the process Pid started, as /proc tells (btime plus
	// its starttime: up to 1 s early); zero when unknown. Filled by
	// LockTable lookups only.
	Started time.Time
}

// String gives "pid 4242 (python3 worker.py)", or says that the placing
// process exited and the lock is kept by an inherited descriptor.
func (h Holder) String() string {
	var b strings.Builder
	if h.Pid > 0 {
		fmt.Fprintf(&b, "pid %d", h.Pid)
	} else {
		// OFD lock, or placed by a process outside this PID namespace.
		b.WriteString("a process not visible here")
	}
	var notes []string
	if h.Command != "" {
		notes = append(notes, h.Command)
	}
	if h.Shared {
		notes = append(notes, "shared")
	}
	if h.Exited {
		if h.PlacedBy > 0 {
			notes = append(notes, fmt.Sprintf("inherited from pid %d, which exited", h.PlacedBy))
		} else {
			notes = append(notes, "exited; the lock is kept by a descriptor it passed on")
		}
	}
	if len(notes) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(notes, ", "))
		b.WriteString(")")
	}
	return b.String()
}

// ProcLock is one line of /proc/locks. Pid is as printed: -1 for OFD locks,
// 0 when the placer is not visible in this PID namespace, negative for some
// remote locks.
type ProcLock struct {
	Kind         string // FLOCK, POSIX, OFDLCK, LEASE, DELEG, ACCESS, UNKNOWN, ...
	Write        bool   // WRITE (else READ, or UNLCK for a lease being broken)
	Waiter       bool   // a blocked request ("->"), not a holder
	Pid          int
	Major, Minor uint32
	Inode        uint64
}

// holderMaxLine bounds a /proc/locks line; real ones are under 120 bytes.
const holderMaxLine = 512

// ParseProcLocks parses the text of /proc/locks (exported for the fuzz
// target); it never panics and skips malformed lines, and lines without an
// inode ("<none>:0"), which no file can match.
func ParseProcLocks(data []byte) []ProcLock {
	var out []ProcLock
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > holderMaxLine {
			continue
		}
		if pl, ok := parseProcLockLine(string(line)); ok {
			out = append(out, pl)
		}
	}
	return out
}

func parseProcLockLine(line string) (ProcLock, bool) {
	var pl ProcLock
	// The kernel separates fields with ASCII spaces only (no
	// strings.Fields: it would split at U+00A0 and the like).
	f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
	if len(f) < 2 {
		return pl, false
	}
	ord, ok := strings.CutSuffix(f[0], ":")
	if !ok || !holderDigits(ord) {
		return pl, false
	}
	f = f[1:]
	if rest, ok := strings.CutPrefix(f[0], "->"); ok {
		pl.Waiter = true
		if rest == "" {
			f = f[1:]
		} else {
			f[0] = rest
		}
	}
	// kind mode access pid major:minor:inode [start end]
	if len(f) < 5 {
		return pl, false
	}
	if !holderWord(f[0]) || !holderWord(f[1]) || !holderWord(f[2]) {
		return pl, false
	}
	pl.Kind = f[0]
	pl.Write = f[2] == "WRITE"
	pid, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil {
		return pl, false
	}
	pl.Pid = int(pid)
	devIno := strings.Split(f[4], ":")
	if len(devIno) != 3 {
		return pl, false
	}
	major, err1 := strconv.ParseUint(devIno[0], 16, 32)
	minor, err2 := strconv.ParseUint(devIno[1], 16, 32)
	ino, err3 := strconv.ParseUint(devIno[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return pl, false
	}
	pl.Major, pl.Minor, pl.Inode = uint32(major), uint32(minor), ino
	return pl, true
}

func holderDigits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// holderWord accepts the kernel's upper-case keywords (and "*NOINODE*").
func holderWord(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '*') {
			return false
		}
	}
	return true
}

// holderProcRoot is where /proc is; tests point it elsewhere.
var holderProcRoot = "/proc"

// holderScanBudget bounds the walk over /proc looking for a process that
// inherited a lock whose placer exited, and holderMaxFound the number of
// such processes reported.
var (
	holderScanBudget = 200 * time.Millisecond
	holderMaxFound   = 4
)

// Holders returns the processes holding a flock on the file with the given
// device and inode, as /proc/locks tells. Never errors on an unreadable /proc
// (returns nil, nil then): it is only used for messages.
//
// A pid from /proc/locks is confirmed, when this process may read its
// /proc/PID/fd, by finding a descriptor on the file that carries the lock.
// When the placing process is gone, the processes that inherited the
// descriptor are looked for across /proc within a small time budget.
//
// It reads /proc/locks at every call: to look up many files, read a
// LockTable once.
func Holders(dev uint64, ino uint64) ([]Holder, error) {
	return ReadLockTable().Holders(dev, ino), nil
}

// LockTable is one reading of /proc/locks: the holders of any number of
// files are looked up in it at the cost of that one read (a status view
// of many blocked gates reads /proc/locks once). Its answers are as of
// the read, confirmed against /proc/PID/fd when they are looked up; like
// Holders', they are for people and can be stale by the time they are
// shown. A LockTable is not safe for concurrent use.
type LockTable struct {
	locks    []ProcLock
	readable bool
	// scanUntil ends the walk over /proc for heirs of exited placers
	// (holderScanBudget), shared by every lookup of the table so that
	// many lookups cost one budget, not one each; set by the first walk.
	scanUntil time.Time
	starts    runner.ProcessStarts // btime read at the first lookup that needs it
}

// ReadLockTable reads and parses /proc/locks once. An unreadable one
// gives a table that knows nothing: Readable is false and every lookup
// finds no holder.
func ReadLockTable() *LockTable {
	data, err := os.ReadFile(holderProcRoot + "/locks")
	if err != nil {
		return &LockTable{}
	}
	return &LockTable{locks: ParseProcLocks(data), readable: true}
}

// Readable reports whether /proc/locks could be read: when it could
// not, "no holder" means "not known".
func (t *LockTable) Readable() bool { return t.readable }

// Locked reports whether the table shows a flock held (not merely
// waited for) on the file with the given device and inode. An entry with
// the inode on another device counts too: stat's st_dev is not always the
// s_dev that /proc/locks prints (btrfs subvolumes, stacked file systems),
// and a caller that counts free files errs on the side of too few.
func (t *LockTable) Locked(dev, ino uint64) bool {
	for _, pl := range t.locks {
		if pl.Kind == "FLOCK" && !pl.Waiter && pl.Inode == ino {
			return true
		}
	}
	return false
}

// LockedExclusive is Locked for an exclusive flock only: what a probe
// with LOCK_SH|LOCK_NB would find busy (a shared one lets it in).
func (t *LockTable) LockedExclusive(dev, ino uint64) bool {
	for _, pl := range t.locks {
		if pl.Kind == "FLOCK" && !pl.Waiter && pl.Write && pl.Inode == ino {
			return true
		}
	}
	return false
}

// Holders returns the processes holding a flock on the file with the
// given device and inode (as Holders, from the table).
func (t *LockTable) Holders(dev, ino uint64) []Holder {
	if !t.readable {
		return nil
	}
	hs := t.holdersFrom(dev, ino)
	for i := range hs {
		hs[i].Started = t.starts.Of(hs[i].Pid)
	}
	return hs
}

// HoldersOf looks up the lock file at path: lstat, never followed and
// never opened, so it takes no lock and cannot block. A missing file is
// held by nobody (exists false); a symlink or anything but a regular file
// is an error wrapping ErrUnsafe.
func (t *LockTable) HoldersOf(path string) (exists bool, holders []Holder, err error) {
	var st unix.Stat_t
	for {
		err = unix.Lstat(path, &st)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return true, nil, fmt.Errorf("lock file %s is a symlink; it is not followed: %w", path, ErrUnsafe)
	default:
		return true, nil, fmt.Errorf("lock file %s is not a regular file: %w", path, ErrUnsafe)
	}
	return true, t.Holders(uint64(st.Dev), st.Ino), nil
}

// holderTarget is the file asked about: dev/ino as stat(2) gives them, and the
// /proc/locks entries (by superblock dev and inode) that are its flocks.
type holderTarget struct {
	dev, ino uint64
	locks    []ProcLock
}

func (tb *LockTable) holdersFrom(dev, ino uint64) []Holder {
	major, minor := unix.Major(dev), unix.Minor(dev)
	var exact, loose []ProcLock
	for _, pl := range tb.locks {
		if pl.Kind != "FLOCK" || pl.Waiter || pl.Inode != ino {
			continue
		}
		if pl.Major == major && pl.Minor == minor {
			exact = append(exact, pl)
		} else {
			loose = append(loose, pl)
		}
	}
	if len(exact) == 0 {
		// stat's st_dev is not always the superblock's s_dev that
		// /proc/locks prints (btrfs subvolumes, some stacked file
		// systems). Accept an entry with the right inode on another
		// device only when its pid has a descriptor on our file that
		// carries it.
		var out []Holder
		for _, pl := range loose {
			if pl.Pid <= 0 {
				continue
			}
			t := holderTarget{dev: dev, ino: ino, locks: []ProcLock{pl}}
			if placers, _, _ := t.locksOf(pl.Pid, time.Time{}); len(placers) > 0 {
				out = holderAppend(out, Holder{Pid: pl.Pid, Command: holderCommand(pl.Pid), Shared: !pl.Write})
			}
		}
		return out
	}

	t := holderTarget{dev: dev, ino: ino, locks: exact}
	var out []Holder
	var gone []ProcLock     // placer exited, no longer has the file, or not visible
	alive := map[int]bool{} // placers in gone that still exist
	for _, pl := range exact {
		if pl.Pid <= 0 {
			gone = append(gone, pl)
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("%s/%d", holderProcRoot, pl.Pid)); err != nil {
			gone = append(gone, pl)
			continue
		}
		if has, known := t.heldBy(pl.Pid); !has && known {
			// Its descriptors are readable and none carries the lock:
			// a zombie, a reused pid, it closed the file after handing
			// it to a child — or it released the lock since /proc/locks
			// was read.
			gone = append(gone, pl)
			alive[pl.Pid] = holderAlive(pl.Pid)
			continue
		}
		out = holderAppend(out, Holder{Pid: pl.Pid, Command: holderCommand(pl.Pid), Shared: !pl.Write})
	}
	if len(gone) == 0 {
		return out
	}

	if tb.scanUntil.IsZero() {
		tb.scanUntil = time.Now().Add(holderScanBudget)
	}
	heirs := t.scan(gone, tb.scanUntil)
	for _, pl := range gone {
		found := false
		for _, h := range heirs {
			if h.pid == pl.Pid || !slices.Contains(h.placers, pl.Pid) {
				continue
			}
			found = true
			heir := Holder{Pid: h.pid, Command: holderCommand(h.pid), Shared: !pl.Write}
			if pl.Pid > 0 {
				// With pid 0 the placer may be alive in another
				// PID namespace: say only who holds it.
				heir.Exited, heir.PlacedBy = true, pl.Pid
			}
			out = holderAppend(out, heir)
		}
		if found {
			continue
		}
		switch {
		case pl.Pid > 0 && alive[pl.Pid]:
			// Alive and no longer holding it, and no heir: it released
			// the lock a moment ago. It was the holder when we tried.
			out = holderAppend(out, Holder{Pid: pl.Pid, Command: holderCommand(pl.Pid), Shared: !pl.Write})
		case pl.Pid > 0:
			out = holderAppend(out, Holder{Pid: pl.Pid, Shared: !pl.Write, Exited: true})
		default:
			// Pid 0: the placer is outside this PID namespace, or
			// exited (outside the initial namespace the kernel
			// cannot name a dead placer). Nobody visible inherited
			// it, so it is most likely the former.
			out = holderAppend(out, Holder{Shared: !pl.Write})
		}
	}
	return out
}

// holderAlive reports whether pid exists and is not a zombie.
func holderAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", holderProcRoot, pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// holderAppend adds h unless a holder with the same pid is already there (a
// process holding two shared locks on the file, through two opens).
func holderAppend(out []Holder, h Holder) []Holder {
	for _, o := range out {
		if h.Pid != 0 && o.Pid == h.Pid {
			return out
		}
		if h.Pid == 0 && o == h {
			return out
		}
	}
	return append(out, h)
}

// heldBy tells whether pid has a descriptor on the target file that carries
// one of the target's flocks. known is false when pid's descriptors cannot
// be read (another user's process, hidepid, or it is gone); has is then true
// if a descriptor on the file was seen but its fdinfo could not be read.
func (t *holderTarget) heldBy(pid int) (has, known bool) {
	placers, openUnknown, known := t.locksOf(pid, time.Time{})
	return len(placers) > 0 || openUnknown, known && !openUnknown
}

// locksOf returns the placer pids (as /proc/locks prints them) of the
// target's flocks carried by pid's descriptors. openUnknown is set when a
// descriptor on the file was seen whose fdinfo could not be read; known is
// false when the descriptors could not be listed. A non-zero deadline cuts
// the work short for processes with very many descriptors.
func (t *holderTarget) locksOf(pid int, deadline time.Time) (placers []int, openUnknown, known bool) {
	dir := fmt.Sprintf("%s/%d/fd", holderProcRoot, pid)
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, false
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, false, false
	}
	known = true
	for i, name := range names {
		if i%256 == 255 && !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		var st unix.Stat_t
		if unix.Stat(dir+"/"+name, &st) != nil {
			continue
		}
		if uint64(st.Dev) != t.dev || st.Ino != t.ino {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("%s/%d/fdinfo/%s", holderProcRoot, pid, name))
		if err != nil {
			openUnknown = true
			continue
		}
		for line := range strings.Lines(string(info)) {
			rest, ok := strings.CutPrefix(line, "lock:")
			if !ok {
				continue
			}
			for _, pl := range ParseProcLocks([]byte(rest)) {
				if pl.Kind == "FLOCK" && !pl.Waiter && t.matches(pl) && !slices.Contains(placers, pl.Pid) {
					placers = append(placers, pl.Pid)
				}
			}
		}
	}
	return placers, openUnknown, known
}

func (t *holderTarget) matches(pl ProcLock) bool {
	for _, l := range t.locks {
		if l.Major == pl.Major && l.Minor == pl.Minor && l.Inode == pl.Inode {
			return true
		}
	}
	return false
}

type holderHeir struct {
	pid     int
	placers []int
}

// scan walks /proc for processes whose descriptors carry the target's
// flocks, until deadline. Processes started after the placer are tried
// first (pids just above the lowest gone placer, then wrapping around), as
// children that inherited the descriptor usually are.
func (t *holderTarget) scan(gone []ProcLock, deadline time.Time) []holderHeir {
	if time.Now().After(deadline) {
		return nil
	}
	f, err := os.Open(holderProcRoot)
	if err != nil {
		return nil
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	start := 0
	if first := slices.MinFunc(gone, func(a, b ProcLock) int { return a.Pid - b.Pid }).Pid; first > 0 {
		i, _ := slices.BinarySearch(pids, first)
		start = i
	}
	var heirs []holderHeir
	for k := range pids {
		if time.Now().After(deadline) || len(heirs) >= holderMaxFound {
			break
		}
		pid := pids[(start+k)%len(pids)]
		if placers, _, _ := t.locksOf(pid, deadline); len(placers) > 0 {
			heirs = append(heirs, holderHeir{pid: pid, placers: placers})
		}
	}
	return heirs
}

// holderCmdMax is the most bytes of a command shown, before "…".
const holderCmdMax = 60

// ProcessCommand gives pid's command line, NULs as spaces, sanitized for a
// one-line message (control and format characters escaped, cut at 60 bytes
// with "…"); or its comm when the command line is empty (kernel threads,
// zombies); or "" when neither can be read.
func ProcessCommand(pid int) string { return holderCommand(pid) }

func holderCommand(pid int) string {
	base := fmt.Sprintf("%s/%d/", holderProcRoot, pid)
	if f, err := os.Open(base + "cmdline"); err == nil {
		// Only the start is needed; a command line can be megabytes.
		buf := make([]byte, 4*holderCmdMax)
		n, _ := io.ReadFull(f, buf)
		f.Close()
		s := strings.ReplaceAll(string(buf[:n]), "\x00", " ")
		s = strings.TrimRight(s, " ")
		if s != "" {
			return holderSanitize(s, holderCmdMax)
		}
	}
	if b, err := os.ReadFile(base + "comm"); err == nil {
		return holderSanitize(strings.TrimSuffix(string(b), "\n"), holderCmdMax)
	}
	return ""
}

// CommandsShownToAll reports whether /proc shows every process's command
// line to every local user: /proc is mounted without hidepid, or with
// hidepid=0 (off). Only then may a command line read with this process's
// rights go where another user reads it (a journal, check.json, the
// dashboard): with hidepid=1, 2 or 4 (noaccess, invisible, ptraceable)
// another user's /proc hides it, and a root cron-gate must not show it to
// them. It reads the options of the topmost proc mount at /proc in
// /proc/self/mountinfo; false when that cannot be read (the safe answer).
func CommandsShownToAll() bool {
	data, err := os.ReadFile(holderProcRoot + "/self/mountinfo")
	return err == nil && procShownToAll(data)
}

// procShownToAll is CommandsShownToAll's reading of a mountinfo text: the
// last proc mount at /proc has no hidepid other than 0 or off. It never
// panics (FuzzProcShownToAll).
func procShownToAll(mountinfo []byte) bool {
	shown, found := false, false
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || f[4] != "/proc" || g[0] != "proc" {
			continue
		}
		found, shown = true, true // the last one listed is the topmost
		for _, o := range strings.Split(g[2], ",") {
			if v, ok := strings.CutPrefix(o, "hidepid="); ok && v != "0" && v != "off" {
				shown = false
			}
		}
	}
	return found && shown
}

// holderSanitize makes s safe to put in a one-line message (a command
// line is anyone's text): safetext.Cut.
func holderSanitize(s string, max int) string { return safetext.Cut(s, max) }
