//go:build linux

package withlock

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/pathlock"
)

// busyLocks is the busy report of a local line (runner.BusyReport):
// the lock files of its paths (canonical, deduplicated, at most
// runner.MaxBusyPaths of them: More counts the rest), those of every
// path of its --first-of candidate sets, and every slot of its pools, so
// that cron-gate's readers can look up who holds each one when they are
// read, not only the first one found busy.
func busyLocks(lockDir string, req lockset.Request, sets [][]string) runner.BusyReportData {
	var d runner.BusyReportData
	dir := absOr(lockDir)
	seen := map[string]bool{}
	add := func(p string) {
		c, err := pathlock.Canonical(p)
		if err != nil || seen[c] {
			return
		}
		seen[c] = true
		if len(seen) > runner.MaxBusyPaths {
			d.More++
			return
		}
		d.Locks = append(d.Locks, runner.BusyLock{Path: c, File: filepath.Join(dir, pathlock.LockName(c))})
	}
	for _, p := range req.Paths {
		add(p)
	}
	for _, set := range sets {
		for _, p := range set {
			add(p)
		}
	}
	for _, ps := range req.Pools {
		tmpl := absOr(ps.Template)
		for i := 0; i < ps.Size; i++ {
			d.Locks = append(d.Locks, runner.BusyLock{Pool: tmpl, File: lockset.SlotFile(tmpl, i)})
		}
	}
	return d
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// WhoReport is `withlock who --json` (schema v 1, docs/withlock.md).
type WhoReport struct {
	V           int        `json:"v"`
	Backend     string     `json:"backend"`
	LockDir     string     `json:"lock_dir,omitempty"` // local
	Busy        bool       `json:"busy"`               // withlock would skip now: a path held, a pool full, or an earlier waiter
	Paths       []WhoPath  `json:"paths"`
	Pools       []WhoPool  `json:"pools,omitempty"`
	Queued      *WhoQueued `json:"queued,omitempty"`       // the earlier waiter withlock would yield to
	QueueUnused string     `json:"queue_unused,omitempty"` // why the queue cannot be used (withlock waits unqueued)
	Unknown     bool       `json:"unknown,omitempty"`      // something could not be told
	Time        time.Time  `json:"time"`
}

// WhoPath is one path of WhoReport.
type WhoPath struct {
	Path      string      `json:"path"`      // as given
	Canonical string      `json:"canonical"` // the Python rule's form
	Lock      string      `json:"lock"`      // the lock file (local) or key (etcd)
	State     string      `json:"state"`     // held, free, unknown
	Holders   []WhoHolder `json:"holders,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// WhoPool is one slot pool of WhoReport.
type WhoPool struct {
	Template string    `json:"template"`
	Size     int       `json:"size"`
	Free     int       `json:"free"`
	Slots    []WhoSlot `json:"slots"`
}

// WhoSlot is one slot of a WhoPool.
type WhoSlot struct {
	Slot    int         `json:"slot"`
	Lock    string      `json:"lock"`
	State   string      `json:"state"`
	Holders []WhoHolder `json:"holders,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// WhoQueued is a waiter in the fair-waiting queue that withlock would
// yield to now.
type WhoQueued struct {
	Ticket string    `json:"ticket"`         // its ticket file (local) or queue key (etcd)
	Pool   string    `json:"pool,omitempty"` // it reserves the free slots of this pool; absent: it waits for some of the paths
	Waiter WhoHolder `json:"waiter"`
}

// WhoHolder is a process holding a lock.
type WhoHolder struct {
	Pid           int       `json:"pid,omitempty"`
	Host          string    `json:"host,omitempty"`
	Command       string    `json:"command,omitempty"`
	Started       time.Time `json:"started,omitzero"` // the process's start
	Since         time.Time `json:"since,omitzero"`   // when it took the lock, when known (etcd)
	Shared        bool      `json:"shared,omitempty"`
	InheritedFrom int       `json:"inherited_from,omitempty"`
}

// NewWhoReport turns an inspection into the report.
func NewWhoReport(backend, lockDir string, in *lockset.Inspection, now time.Time) *WhoReport {
	r := &WhoReport{V: 1, Backend: backend, Busy: in.Busy(), Unknown: in.Unknown(), Paths: []WhoPath{}, Time: now}
	if backend == backends[0].Name {
		r.LockDir = absOr(lockDir)
	}
	for _, p := range in.Paths {
		r.Paths = append(r.Paths, WhoPath{Path: p.Given, Canonical: p.Canonical, Lock: p.Lock, State: p.State, Holders: whoHolders(p.Holders), Error: p.Error})
	}
	for _, p := range in.Pools {
		wp := WhoPool{Template: p.Template, Size: p.Size, Free: p.Free()}
		for _, s := range p.Slots {
			wp.Slots = append(wp.Slots, WhoSlot{Slot: s.Slot, Lock: s.Lock, State: s.State, Holders: whoHolders(s.Holders), Error: s.Error})
		}
		r.Pools = append(r.Pools, wp)
	}
	r.QueueUnused = in.QueueUnused
	if q := in.Queued; q != nil {
		r.Queued = &WhoQueued{Ticket: q.Ticket, Pool: q.Pool, Waiter: whoHolders([]lockset.HolderInfo{q.Waiter})[0]}
	}
	return r
}

func whoHolders(hs []lockset.HolderInfo) []WhoHolder {
	var out []WhoHolder
	for _, h := range hs {
		out = append(out, WhoHolder{Pid: h.Pid, Host: h.Host, Command: h.Command, Started: h.Started, Since: h.Since, Shared: h.Shared, InheritedFrom: h.InheritedFrom})
	}
	return out
}

// String says who it is: "pid 4242 (python3 w.py), started 2026-11-29
// 09:00:03 KST" (etcd: "pid 4242 on HOST (…), holding it since …"), in
// local time.
func (h WhoHolder) String() string {
	s := "a process not visible here"
	if h.Pid > 0 {
		s = fmt.Sprintf("pid %d", h.Pid)
	}
	if h.Host != "" {
		s += " on " + h.Host
	}
	var notes []string
	if h.Command != "" {
		notes = append(notes, h.Command)
	}
	if h.Shared {
		notes = append(notes, "shared")
	}
	if h.InheritedFrom > 0 {
		notes = append(notes, fmt.Sprintf("inherited from pid %d, which exited", h.InheritedFrom))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	if !h.Since.IsZero() {
		s += ", holding it since " + h.Since.Local().Format("2006-01-02 15:04:05 MST")
	}
	if !h.Started.IsZero() {
		s += ", started " + h.Started.Local().Format("2006-01-02 15:04:05 MST")
	}
	return s
}

func stateWords(state, errText string, hs []WhoHolder) string {
	switch state {
	case lockset.StateHeld:
		if len(hs) == 0 {
			return "held by a process not visible here"
		}
		parts := make([]string, len(hs))
		for i, h := range hs {
			parts[i] = h.String()
		}
		return "held by " + strings.Join(parts, "; ")
	case lockset.StateUnknown:
		return "unknown: " + errText
	}
	return "free"
}

// Print writes the report for people: per path its canonical form, its
// lock and its state; per pool how many slots are free and each slot.
// Every value from the outside (paths, command lines) is neutralised
// (safetext.Line).
func (r *WhoReport) Print(w io.Writer) {
	line := func(format string, args ...any) { fmt.Fprintln(w, safetext.Line(fmt.Sprintf(format, args...))) }
	for _, p := range r.Paths {
		if p.Canonical != p.Path {
			line("%s (%s)", p.Path, p.Canonical)
		} else {
			line("%s", p.Path)
		}
		line("  lock  %s", p.Lock)
		line("  %s", stateWords(p.State, p.Error, p.Holders))
	}
	for _, p := range r.Pools {
		what := fmt.Sprintf("%d of %d slots free", p.Free, p.Size)
		if p.Free == 0 {
			what = fmt.Sprintf("all %d slots held", p.Size)
		}
		line("slot pool %s: %s", p.Template, what)
		for _, s := range p.Slots {
			line("  slot %d  %s  %s", s.Slot, s.Lock, stateWords(s.State, s.Error, s.Holders))
		}
	}
	if q := r.Queued; q != nil {
		what := "waits for some of these paths"
		if q.Pool != "" {
			what = fmt.Sprintf("reserves the free slots of pool %s", q.Pool)
		}
		line("queued: an earlier waiter, %s, %s: withlock would yield to it", q.Waiter, what)
		line("  ticket  %s", q.Ticket)
	}
	if r.QueueUnused != "" {
		line("queue: not used (withlock waits unqueued): %s", r.QueueUnused)
	}
}
