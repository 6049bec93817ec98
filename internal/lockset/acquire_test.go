package lockset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// scripted is a Claim whose tries answer in a given order, the last one
// for every try after.
type scripted struct {
	answers []error
	tries   int
	waits   int
}

type heldNothing struct{}

func (heldNothing) Paths() []string       { return nil }
func (heldNothing) Slots() []int          { return nil }
func (heldNothing) Files() []*os.File     { return nil }
func (heldNothing) Lost() <-chan struct{} { return nil }
func (heldNothing) Release()              {}

func (s *scripted) TryAcquire() (Held, error) {
	err := s.answers[min(s.tries, len(s.answers)-1)]
	s.tries++
	if err != nil {
		return nil, err
	}
	return heldNothing{}, nil
}

func (s *scripted) WaitChange(ctx context.Context, poll time.Duration) error {
	s.waits++
	return nil
}

func (s *scripted) Close() {}

var errDown = fmt.Errorf("no answer: %w", ErrUnavailable)

// A coordinator that does not answer is waited out while the wait lasts
// (tried again, without waiting for a release that nothing will report),
// fails at once without a wait, and fails with its own error when the
// wait runs out; any other failure ends the wait at once.
func TestAcquireWaitsOutUnavailable(t *testing.T) {
	s := &scripted{answers: []error{errDown, errDown, nil}}
	if h, err := Acquire(context.Background(), s, time.Minute); err != nil || h == nil {
		t.Fatalf("unavailable twice, then free, with a wait: %v, %v; want held", h, err)
	}
	if s.tries != 3 || s.waits != 0 {
		t.Errorf("%d tries and %d waits for a release; want 3 and 0", s.tries, s.waits)
	}

	s = &scripted{answers: []error{errDown, nil}}
	if _, err := Acquire(context.Background(), s, 0); !errors.Is(err, ErrUnavailable) || s.tries != 1 {
		t.Errorf("without a wait: %v after %d tries; want the unavailable error after 1", err, s.tries)
	}

	s = &scripted{answers: []error{errDown}}
	if _, err := Acquire(context.Background(), s, 3*Poll); !errors.Is(err, ErrUnavailable) || s.tries < 2 {
		t.Errorf("unavailable throughout a wait: %v after %d tries; want the unavailable error after several", err, s.tries)
	}

	other := errors.New("bad path")
	s = &scripted{answers: []error{errDown, other, nil}}
	if _, err := Acquire(context.Background(), s, time.Minute); err != other || s.tries != 2 {
		t.Errorf("unavailable, then another failure: %v after %d tries; want that failure after 2", err, s.tries)
	}
}
