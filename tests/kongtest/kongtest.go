// Package kongtest parses a command line with kong alone, the authority
// that each fast parser (runner.FastParse, as withlock and cron-gate use
// it) is held to by their tests and fuzzers.
package kongtest

import (
	"io"
	"reflect"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/crongate/crongate/internal/runner/kongduration"
)

// Parse parses args into dst (a pointer to a kong struct) with kong,
// durations read as the binaries read them (kongduration); false when
// kong refuses them or would exit (help, version).
func Parse(t testing.TB, dst any, args []string, opts ...kong.Option) bool {
	t.Helper()
	opts = append([]kong.Option{kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) { panic("kong exit") }),
		kongduration.Option()}, opts...)
	k, err := kong.New(dst, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { recover() }()
	_, err = k.Parse(args)
	return err == nil
}

// Agree fails t unless kong, parsing kongArgs into a zero T, accepts them
// and fills in exactly fast, what the fast parser made of the same line.
func Agree[T any](t testing.TB, fast *T, kongArgs []string, opts ...kong.Option) {
	t.Helper()
	var slow T
	if !Parse(t, &slow, kongArgs, opts...) {
		t.Fatalf("the fast parser accepted %q, kong refuses it", kongArgs)
	}
	if !reflect.DeepEqual(*fast, slow) {
		t.Fatalf("the fast parser and kong differ on %q:\nfast %+v\nkong %+v", kongArgs, *fast, slow)
	}
}
