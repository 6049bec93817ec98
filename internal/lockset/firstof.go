//go:build linux

package lockset

import (
	"fmt"
	"strconv"
)

// FirstOfBackend is a Backend that can take the first free of several
// candidate path sets (withlock --first-of). Every backend withlock serves
// implements it.
type FirstOfBackend interface {
	// OpenFirstOf prepares a claim on one slot of every pool plus the
	// first of sets (each a non-empty list of paths as the user gave
	// them) that can be taken entirely. Like Open it takes nothing; its
	// errors are the caller's own failures, never contention.
	OpenFirstOf(pools []PoolSpec, sets [][]string) (FirstOfClaim, error)
}

// FirstOfClaim is a Claim over candidate sets. Its TryAcquire takes the
// slots once, then tries the sets in the order given, each all or nothing,
// holding nothing of a set it could not take entirely, and returns with
// the first set it took held (with the slots). If no set is free it holds
// nothing (the slots are released too) and returns an *AllBusyError; if a
// slot pool is full it returns that pool's busy error without trying any
// set.
type FirstOfClaim interface {
	Claim
	// Candidate is the index (0-based, in the order given) of the set
	// held after the last successful TryAcquire.
	Candidate() int
}

// AllBusyError is the contention error of a FirstOfClaim when every
// candidate set was busy (or there was none). It wraps ErrBusy and is a BusyError.
type AllBusyError struct {
	// Sets is how many candidate sets were tried, all busy.
	Sets int
	// First is the busy error of the first set (the head of the queue).
	First BusyError
}

func (e *AllBusyError) Error() string {
	s := strconv.Itoa(e.Sets) + " sets busy"
	switch e.Sets {
	case 0:
		return "no candidate set (the list is empty)"
	case 1:
		s = "1 set busy"
	}
	if e.First != nil {
		s += fmt.Sprintf(" (the first: %v)", e.First)
	}
	return s
}

func (e *AllBusyError) Unwrap() error { return ErrBusy }

// FindHolders looks up who holds the first set's busy path.
func (e *AllBusyError) FindHolders() {
	if e.First != nil {
		e.First.FindHolders()
	}
}
