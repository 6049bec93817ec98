//go:build linux

package etcdlock

import (
	"strings"

	"github.com/crongate/crongate/internal/lockset"
)

// BusyError says which path or pool was busy and who holds it (from the
// keys' values). It wraps lockset.ErrBusy and is a lockset.BusyError.
type BusyError struct {
	What    string   // the canonical path, or "slot pool TEMPLATE (N slots)"
	Key     string   // the etcd key (or pool prefix)
	Holders []string // "pid P on HOST (CMD) since T"
	pool    bool
	partial bool // keys may have been put in this attempt: revoke them
	// undo: the keys a single transaction put before a pool was found
	// full (partial), known from its answer; nil if not known exactly.
	undo   []string
	dealt  bool // a shared pool's dealt slots were taken meanwhile: deal again
	queued bool // an earlier waiter is queued for some of the paths (Key is its queue key)
	// slotPool: the earlier waiter is queued for slots of this pool
	// (its template), which the free slots would not cover.
	slotPool string
}

func (e *BusyError) Error() string {
	if e.queued && e.slotPool != "" {
		return "an earlier waiter (" + strings.Join(e.Holders, ", ") + ", etcd key " + e.Key + ") is queued for slots of pool " + e.slotPool
	}
	if e.queued {
		return "an earlier waiter (" + strings.Join(e.Holders, ", ") + ", etcd key " + e.Key + ") is queued for some of these paths"
	}
	s := e.What + " is busy (etcd key " + e.Key
	if len(e.Holders) > 0 {
		s += " held by " + strings.Join(e.Holders, ", ")
	}
	return s + ")"
}

func (e *BusyError) Unwrap() error { return lockset.ErrBusy }

// FindHolders does nothing: the holders came with the answer that found
// the key busy (lockset.BusyError).
func (e *BusyError) FindHolders() {}
