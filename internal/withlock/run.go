//go:build linux

// Package withlock is the withlock command: its options (one kong struct,
// CLI), the fast parser that reads its table from that struct, the
// registry of backends, Run, the one run loop of every backend, and kong's
// parser for every other form of the line (kong.go: Main, Serve, Who).
// Two binaries serve it: withlock, which
// runs every local command line alone and links no backend but the local
// one, and withlock-etcd, the etcd backend's program, which brings its
// Driver. withlock hands a line whose backend another program serves to
// that program, unchanged (by exec: Dispatch); see docs/design.md, "One
// withlock binary".
package withlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
)

// Run runs withlock with options Check has accepted for d, on d's backend.
// It is the one run loop of every backend: what differs between them comes
// through d's Conn and lockset's interfaces (a lockset.Leased held set is
// run under a parent-death signal and stopped, exit 70, if its lease is
// lost).
//
// sigs is runner.Notify's channel: until the command starts, runner's
// guard ends withlock on a signal with 128+N (whatever stage it is in:
// reading --paths-from, waiting for locks; what a backend holds by then is
// released as after a SIGKILL: flock locks at once, a lease when it
// expires); from then on the signals arrive on sigs and are forwarded to
// the command's process group.
func Run(o *Options, sigs chan os.Signal, d Driver) int { return runWith(o, sigs, d, nil) }

// runWith is Run with its messages written to w (nil: stderr).
func runWith(o *Options, sigs chan os.Signal, d Driver, w io.Writer) int {
	b, _ := LookupBackend(d.Name())
	// Taken first, so that the command never inherits it.
	report := runner.TakeBusyReport()
	r := &run{o: o, backend: b.Name, out: &safetext.Printer{Prog: b.Binary, W: w, Quiet: o.Quiet, Verbose: o.Verbose}}
	if o.Version {
		fmt.Println("withlock", runner.BuildString())
		return 0
	}
	var req lockset.Request
	var sets [][]string
	var err error
	if o.FirstOf {
		req.Pools, sets, err = o.Candidates()
	} else {
		req, err = o.Request()
	}
	if err != nil {
		r.out.Errorf("%v", err)
		return runner.ExitFailure
	}
	// Resolve the command before taking any lock: "not found" needs none.
	child, err := runner.Prepare(runner.Spec{Argv: o.Command, Timeout: o.Timeout, KillAfter: o.KillAfter})
	if err != nil {
		r.out.Errorf("%v", err)
		return runner.ExitCode(err)
	}
	conn, err := d.Open(o)
	if err != nil {
		return r.fail(nil, err)
	}
	defer conn.Close()
	var claim lockset.Claim
	var first lockset.FirstOfClaim
	if sets != nil {
		fb, ok := conn.(lockset.FirstOfBackend)
		if !ok {
			r.out.Errorf("--first-of is not available on the %s backend", b.Name)
			return runner.ExitFailure
		}
		first, err = fb.OpenFirstOf(req.Pools, sets)
		claim = first
	} else {
		claim, err = conn.Open(req)
	}
	if err != nil {
		return r.fail(conn, err)
	}
	defer claim.Close()
	if o.Wait > 0 {
		// Paid once per process anyway, at the start; here it is paid
		// before any wait rather than between a release and the start.
		runner.Warm()
	}
	held, err := Acquire(claim, o.Wait)
	for _, n := range conn.Notes() {
		r.out.Infof("%s", n)
	}
	if err != nil {
		code := r.notHeld(conn, err)
		if code == o.SkipCode && b.Name == backends[0].Name {
			// The locks live in local files cron-gate can look up.
			report.Write(busyLocks(o.LockDir, req, sets))
		}
		return code
	}
	defer r.release(held)
	if first != nil {
		child.AddEnv("WITHLOCK_CANDIDATE=" + strconv.Itoa(first.Candidate()))
	}
	return r.runHeld(child, conn, held, sigs)
}

// runHeld runs the command under the locks held, and returns withlock's
// exit code.
func (r *run) runHeld(child *runner.Child, conn Conn, held lockset.Held, sigs chan os.Signal) int {
	pathsFile, err := r.handTo(child, conn, held)
	if err != nil {
		return r.fail(conn, err)
	}
	if pathsFile != nil {
		defer pathsFile.Close()
	}
	r.out.Infof("holding %v", holding{conn, held}) // formatted only with -v
	leased, _ := held.(lockset.Leased)
	if leased != nil {
		if code, stop := r.underLease(child, leased); stop {
			return code
		}
	}
	start := time.Now()
	if err := child.Start(); err != nil {
		r.out.Errorf("%v", err)
		return runner.ExitCode(err)
	}
	if st, ok := held.(lockset.Started); ok {
		st.Started()
	}
	var res runner.Result
	if leased == nil {
		res = child.Wait(sigs, start)
	} else if res = r.waitLeased(child, sigs, start, leased); r.lost {
		return runner.ExitLost
	}
	if res.TimedOut {
		r.out.Errorf("%s timed out after %v", QuoteArgs(r.o.Command), r.o.Timeout)
	}
	return res.Code
}

// holding is what -v says is held: Conn.Holding, called only if the
// message is written.
type holding struct {
	conn Conn
	held lockset.Held
}

func (h holding) String() string { return h.conn.Holding(h.held) }

// run is one Run: what its steps share.
type run struct {
	o       *Options
	backend string // its name, for messages
	out     *safetext.Printer
	lost    bool // the lease was lost while the command ran
}

// fail reports that the command cannot run: withlock's own failure (exit
// 125), with the backend's hint where it has one (conn may be nil); or,
// for a coordinator that did not answer, the skip code under
// --on-coordinator-down skip.
func (r *run) fail(conn Conn, err error) int {
	if errors.Is(err, lockset.ErrUnavailable) {
		if r.o.OnCoordinatorDown == "skip" {
			r.out.Skipf("skipped %s: %v", QuoteArgs(r.o.Command), err)
			return r.o.SkipCode
		}
		r.out.Errorf("%v", err)
		r.out.Hintf("the command did not run; --on-coordinator-down skip exits with the skip code instead")
		return runner.ExitFailure
	}
	r.out.Errorf("%v", err)
	if conn != nil {
		if h := conn.Hint(err); h != "" {
			r.out.Hintf("%s", h)
		}
	}
	return runner.ExitFailure
}

// notHeld ends a run whose locks could not be taken: busy is the skip code
// (saying who holds what to a person at a terminal, or with -v: see
// safetext.Printer), anything else a failure.
func (r *run) notHeld(conn Conn, err error) int {
	be, ok := errors.AsType[lockset.BusyError](err)
	if !ok {
		return r.fail(conn, err)
	}
	if r.out.SaysSkips() {
		be.FindHolders()
		r.out.Skipf("skipped %s: %v", QuoteArgs(r.o.Command), be)
	}
	return r.o.SkipCode
}

// release gives the locks back, and warns if a lease could not be
// revoked (its locks then end when it expires).
func (r *run) release(held lockset.Held) {
	held.Release()
	if leased, ok := held.(lockset.Leased); ok && leased.ReleaseErr() != nil {
		r.out.Warnf("could not release the locks (%v); they expire with the lease, within %v", leased.ReleaseErr(), leased.TTL())
	}
}

// handTo tells the command what it holds: the descriptors that carry the
// locks (inherited, so the locks live as long as the command does, even if
// withlock itself is killed: docs/withlock.md, Lock lifetime), WITHLOCK_PATHS (or a
// memory file for a long list, returned for the caller to close),
// WITHLOCK_SLOT and the backend's own entries (Conn.Env).
func (r *run) handTo(child *runner.Child, conn Conn, held lockset.Held) (*os.File, error) {
	child.AddFiles(held.Files()...)
	env, pathsFile, err := PathsEnv(held.Paths(), 3+len(child.Files()))
	if err != nil {
		return nil, err
	}
	if pathsFile != nil {
		child.AddFiles(pathsFile)
	}
	env = append(env, "WITHLOCK_SLOT="+SlotList(held))
	child.AddEnv(append(env, conn.Env(held)...)...)
	return pathsFile, nil
}

// Acquire takes the claim, waiting up to wait. Signals are not its
// concern: until the command starts, runner's guard (runner.Notify) ends
// withlock at once with 128+N, during --wait too (nothing is held then),
// and the command never starts.
func Acquire(c lockset.Claim, wait time.Duration) (lockset.Held, error) {
	return lockset.Acquire(context.Background(), c, wait)
}

// Request builds the lock request from the options.
func (o *Options) Request() (lockset.Request, error) {
	r := lockset.Request{Paths: o.Paths}
	if o.PathsFrom != "" {
		more, err := readPaths(o.PathsFrom, o.Null)
		if err != nil {
			return r, err
		}
		r.Paths = append(r.Paths, more...)
	}
	r.Pools = o.pools()
	if len(r.Paths) == 0 && len(r.Pools) == 0 {
		return r, fmt.Errorf("nothing to lock: %s holds no paths", o.PathsFrom)
	}
	return r, nil
}

// Candidates builds a --first-of request from the options: the slot
// pools, and the candidate sets read from --candidates-from, in order
// (none for an empty list: the claim then finds no set free).
func (o *Options) Candidates() ([]lockset.PoolSpec, [][]string, error) {
	pools := o.pools()
	sets, err := readCandidates(o.CandidatesFrom, o.Null)
	if err != nil {
		return nil, nil, err
	}
	if sets == nil {
		// An empty queue: no set is free, so the skip code (an empty
		// queue is a tick with nothing to do, not a failure).
		sets = [][]string{}
	}
	return pools, sets, nil
}

// pools are the slot pools the options name, in order.
func (o *Options) pools() []lockset.PoolSpec {
	var ps []lockset.PoolSpec
	for i, n := range o.Slots {
		t := filepath.Join(o.LockDir, lockset.DefaultSlotTemplate)
		if i < len(o.SlotFile) {
			t = o.SlotFile[i]
		}
		ps = append(ps, lockset.PoolSpec{Size: n, Template: t})
	}
	return ps
}

// Limits of --paths-from (docs/withlock.md). They bound the time and
// memory a list can cost, whatever is named: /dev/zero, an endless pipe.
const (
	// MaxPathsFromBytes bounds what is read, duplicates included.
	MaxPathsFromBytes = 128 << 20
	// MaxPathsFromEntries bounds the distinct entries kept (exact
	// duplicates are dropped as they are read; a set is further bounded
	// by the open-file limit once canonicalised).
	MaxPathsFromEntries = 1 << 20
	// MaxEntryBytes is the longest entry. A spelling may be longer than
	// PATH_MAX and still name a lock (Python resolves it as text: docs/python.md,
	// Python compatibility), so the bound is far above it.
	MaxEntryBytes = 1 << 20
)

// readPaths reads one path per line (or per NUL with -0) from the file
// name, or stdin for "-"; empty entries are skipped and only the
// terminator is removed (a line that ends in CR is refused: crError). The file must be a regular file or a pipe
// (safeopen.OpenStream: never a device; a named FIFO is waited for until
// a writer opens it, as cat waits, and runner's guard ends that wait on a
// signal).
func readPaths(name string, null bool) ([]string, error) {
	sets, err := readLists("--paths-from", name, null, false)
	if err != nil || len(sets) == 0 {
		return nil, err
	}
	return sets[0], nil
}

// readCandidates reads the candidate sets of --first-of from the file
// name, or stdin for "-", as readPaths reads a list, except that an empty
// line (with -0: an empty entry) ends a set (scanLists).
func readCandidates(name string, null bool) ([][]string, error) {
	return readLists("--candidates-from", name, null, true)
}

// readLists opens name for flag as readPaths says and scans it
// (scanLists).
func readLists(flag, name string, null, split bool) ([][]string, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := safeopen.OpenStream(name)
		if err != nil {
			if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
				return nil, fmt.Errorf("%s: %s is %s; give a regular file, a pipe, or - for stdin", flag, name, fe.Kind)
			}
			return nil, fmt.Errorf("%s: %s: %w", flag, name, safeopen.Cause(err))
		}
		defer f.Close()
		r = f
	}
	return scanLists(r, flag, name, null, split)
}

// scanPaths reads the entries of r as readPaths says, checking each as it
// is read: a NUL in a line (no path holds one) or an entry longer than
// MaxEntryBytes is refused at once, and reading stops with an error past
// MaxPathsFromBytes or MaxPathsFromEntries.
func scanPaths(r io.Reader, name string, null bool) ([]string, error) {
	sets, err := scanLists(r, "--paths-from", name, null, false)
	if err != nil || len(sets) == 0 {
		return nil, err
	}
	return sets[0], nil
}

// crError refuses line n of a list, which ends in a carriage return.
// A name may end in CR, but a list whose lines do was almost surely
// written with CRLF line ends (Windows): stripping it would lock another
// path than the one named, keeping it would lock a path nobody else
// names (and a "\r" line would join two candidate sets). So it is
// refused, the same for --paths-from, --candidates-from and who
// (docs/withlock.md, "Path lists"); a name that really ends in CR is
// given with -0.
func crError(flag, name string, n int) error {
	return fmt.Errorf("%s %s: line %d ends in a carriage return (CRLF line ends?), which no path here is taken to end in: convert the list (sed 's/\\r$//'), or give it NUL-separated (-0)", flag, name, n)
}

// scanLists reads the entries of r for flag: one per line, or per NUL
// with null. Without split, empty entries are skipped and exact
// duplicates dropped, and the result is one list (or none). With split, a
// run of empty entries ends a set (none at the start or the end count),
// duplicates are dropped within a set, and the result is the non-empty
// sets in order. The limits (MaxPathsFromBytes, MaxEntryBytes, and
// MaxPathsFromEntries over all sets together) and the NUL check hold in
// both modes, as does the CR rule of line mode (crError).
func scanLists(r io.Reader, flag, name string, null, split bool) ([][]string, error) {
	sep, unit := byte('\n'), "line"
	if null {
		sep, unit = 0, "entry"
	}
	if name == "-" {
		name = "- (stdin)"
	}
	seen := map[string]struct{}{}
	var sets [][]string
	var paths []string // the current set
	var cur []byte     // the entry being read
	n := 1             // its number
	kept := 0          // entries kept, all sets
	var total int64
	add := func() error {
		if !null && len(cur) > 0 && cur[len(cur)-1] == '\r' {
			return crError(flag, name, n)
		}
		if _, dup := seen[string(cur)]; len(cur) > 0 && !dup {
			if kept == MaxPathsFromEntries {
				return fmt.Errorf("%s %s: more than %d distinct paths; split the list", flag, name, MaxPathsFromEntries)
			}
			s := string(cur)
			seen[s] = struct{}{}
			paths = append(paths, s)
			kept++
		}
		cur = cur[:0]
		n++
		return nil
	}
	endSet := func() {
		if len(paths) > 0 {
			sets = append(sets, paths)
			paths = nil
			clear(seen)
		}
	}
	buf := make([]byte, 64<<10)
	for {
		got, err := r.Read(buf)
		total += int64(got)
		if total > MaxPathsFromBytes {
			return nil, fmt.Errorf("%s %s: more than %s; split the list", flag, name, safeopen.Size(MaxPathsFromBytes))
		}
		data := buf[:got]
		if !null {
			if i := bytes.IndexByte(data, 0); i >= 0 {
				return nil, fmt.Errorf("%s %s: line %d holds a NUL byte, which no path can (a NUL-separated list needs -0)",
					flag, name, n+bytes.Count(data[:i], []byte{sep}))
			}
		}
		for len(data) > 0 {
			if len(cur) == 0 && data[0] == sep {
				// A run of empty entries (-0 on /dev/zero): skipped
				// whole, not one call per byte; with split it ends the
				// set.
				j := 1
				for j < len(data) && data[j] == sep {
					j++
				}
				n += j
				data = data[j:]
				if split {
					endSet()
				}
				continue
			}
			i := bytes.IndexByte(data, sep)
			piece := data
			if i >= 0 {
				piece, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if len(cur)+len(piece) > MaxEntryBytes {
				return nil, fmt.Errorf("%s %s: %s %d is longer than %s", flag, name, unit, n, safeopen.Size(MaxEntryBytes))
			}
			cur = append(cur, piece...)
			if i >= 0 {
				if err := add(); err != nil {
					return nil, err
				}
			}
		}
		switch {
		case err == io.EOF:
			if err := add(); err != nil {
				return nil, err
			}
			endSet()
			return sets, nil
		case err != nil:
			return nil, fmt.Errorf("%s %s: %w", flag, name, err)
		}
	}
}
