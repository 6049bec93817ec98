//go:build linux

package withlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/lockset"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/lockfile"
)

// Backend is one place withlock can keep its locks, as the registry knows
// it: a name and the program that serves it. It names no implementation,
// so that the per-tick withlock holds the whole list while linking only the
// local backend (the etcd client would cost it about 7 ms and 15 MB a
// call); the program that serves a backend brings its Driver.
type Backend struct {
	// Name is the value of --backend and $WITHLOCK_BACKEND.
	Name string
	// Binary is the program that links the backend and runs every
	// command line that chooses it: withlock execs it with the same
	// arguments (same PID, so a supervisor's signals still reach the
	// process that holds the locks). Its messages carry its name.
	Binary string
	// given returns the first of the flags only this backend reads that
	// the command line gives ("" if none), for messages: with another
	// backend they are refused.
	given func(*CLI) string
}

// backends is the registry: every backend withlock knows, the default
// first. Adding one is an entry here, its flags in CLI, and a Driver in
// the program named.
var backends = [...]Backend{
	{Name: "local", Binary: "withlock"},
	{Name: "etcd", Binary: "withlock-etcd", given: func(c *CLI) string {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"--endpoints", len(c.Endpoints) > 0}, {"--key-root", c.KeyRoot != ""}, {"--key-prefix", c.KeyPrefix != ""},
			{"--ttl", c.TTL != 0}, {"--on-coordinator-down", c.OnCoordinatorDown != ""}, {"--lock-delay", c.LockDelay != ""},
			{"--ca-file", c.CAFile != ""}, {"--cert-file", c.CertFile != ""}, {"--key-file", c.KeyFile != ""},
			{"--server-name", c.ServerName != ""}, {"--etcd-user", c.EtcdUser != ""}, {"--password-file", c.PasswordFile != ""},
		} {
			if f.set {
				return f.name
			}
		}
		return ""
	}},
}

// LookupBackend returns the registry's entry for name.
func LookupBackend(name string) (Backend, bool) {
	for i := range backends {
		if backends[i].Name == name {
			return backends[i], true
		}
	}
	return Backend{}, false
}

// backendNames lists the backends for messages: "local or etcd".
func backendNames() string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Driver is a backend as the program that serves it runs it: what Run
// needs from a backend beyond lockset's interfaces (lockset.Leased,
// lockset.BusyError, lockset.ErrUnavailable), which carry its behaviour
// while the command runs.
type Driver interface {
	// Name is the backend's name in the registry.
	Name() string
	// Configure fills in the backend's defaults (from the environment,
	// else built in) and checks its own flags; Check has checked the
	// rest of the command line.
	Configure(o *Options) error
	// Open opens the backend for one run of o. It takes nothing, and
	// need not contact a coordinator yet.
	Open(o *Options) (Conn, error)
}

// Conn is a backend opened for one run.
type Conn interface {
	lockset.Backend
	// Hint returns a hint line for an error of the backend, or "".
	Hint(err error) string
	// Notes returns what -v says after an attempt to take the locks,
	// whatever its outcome (for etcd: transactions read back), if
	// anything.
	Notes() []string
	// Holding says what h holds and where, for -v: the text after
	// "holding ".
	Holding(h lockset.Held) string
	// Env returns the environment entries the command gets for h beyond
	// WITHLOCK_PATHS and WITHLOCK_SLOT (for etcd: the fencing token), if
	// any.
	Env(h lockset.Held) []string
	// Close closes the connection. It does not release what is held.
	Close()
}

// Local is the driver of the local flock backend (lockset.Local), which
// withlock serves.
var Local Driver = localDriver{}

type localDriver struct{}

func (localDriver) Name() string             { return backends[0].Name }
func (localDriver) Configure(*Options) error { return nil }
func (localDriver) Open(o *Options) (Conn, error) {
	return &localConn{Local: lockset.Local{LockDir: o.LockDir}}, nil
}

// localConn is the local backend for one run; it keeps the claim it
// opened, whose notes (an unusable waiting queue) -v says.
type localConn struct {
	lockset.Local
	claim lockset.Claim
}

func (c *localConn) Open(r lockset.Request) (lockset.Claim, error) {
	cl, err := c.Local.Open(r)
	c.claim = cl
	return cl, err
}

func (c *localConn) OpenFirstOf(pools []lockset.PoolSpec, sets [][]string) (lockset.FirstOfClaim, error) {
	cl, err := c.Local.OpenFirstOf(pools, sets)
	c.claim = cl
	return cl, err
}

func (c *localConn) Hint(err error) string {
	if errors.Is(err, lockfile.ErrUnsafe) {
		return "withlock never follows a symlink or uses another user's lock dir; see docs/security.md, Permissions"
	}
	if errors.Is(err, fs.ErrPermission) {
		return lockDirHint(c.LockDir)
	}
	return ""
}

// lockDirHint says how to fix a lock dir this user may not create lock
// files in: most often the default one, made by root first with root's
// umask (0755). withlock does not widen a directory's mode itself; the
// operator decides who shares it (docs/security.md, Permissions). "" if
// the dir is this user's, or cannot be looked at.
func lockDirHint(dir string) string {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil || st.Uid == uint32(os.Geteuid()) || unix.Access(dir, unix.W_OK) == nil {
		return ""
	}
	// The uid, not a name: the lean binary does not link os/user.
	return fmt.Sprintf("the lock dir %s (uid %d, mode %04o) is not yours to create lock files in: share it (chmod 1777, or chgrp GROUP and chmod 2775: docs/security.md, Permissions), or give --lock-dir a dir of your own",
		safetext.Line(dir), st.Uid, st.Mode&0o7777)
}

func (c *localConn) Notes() []string {
	if n, ok := c.claim.(lockset.Noted); ok {
		return n.Notes()
	}
	return nil
}

func (c *localConn) Holding(h lockset.Held) string {
	return HoldingText(h, "path lock", "in "+c.LockDir)
}

// HoldingText says what a held set holds, for -v: "2 path locks in DIR
// and slot 3", "slots 0,2", "1 path lock in DIR"; unit names a path's
// lock ("path lock"), where says where the paths' locks are.
func HoldingText(h lockset.Held, unit, where string) string {
	var parts []string
	if n := len(h.Paths()); n > 0 {
		parts = append(parts, Count(n, unit)+" "+where)
	}
	switch n := len(h.Slots()); {
	case n == 1:
		parts = append(parts, "slot "+SlotList(h))
	case n > 1:
		parts = append(parts, "slots "+SlotList(h))
	}
	if parts == nil {
		return "nothing"
	}
	return strings.Join(parts, " and ")
}

// Count is "1 slot", "2 slots": n and unit, plural but for 1.
func Count(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func (localConn) Env(lockset.Held) []string { return nil }
func (localConn) Close()                    {}

// SlotList is the value of WITHLOCK_SLOT: the slot held in each pool, in
// request order, comma-separated.
func SlotList(h lockset.Held) string {
	var b []byte
	for i, s := range h.Slots() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s), 10)
	}
	return string(b)
}

// Check checks o for the program that serves d: Validate's checks, then
// the backend's. The backend chosen (--backend, else $WITHLOCK_BACKEND,
// else d's own) must be in the registry and be d's, and no other
// backend's flags may be given; then d.Configure fills in and checks d's
// own. It sets o.Backend to the backend chosen.
func (o *Options) Check(found bool, d Driver) error {
	// A backend that does not exist is said first: whatever else is
	// wrong with the line, it is the wrong program's line.
	if _, _, err := o.chosenBackend(d); err != nil {
		return err
	}
	if err := o.Validate(found); err != nil {
		return err
	}
	return o.CheckBackend(d)
}

// chosenBackend is the backend the line asks for: --backend, else
// $WITHLOCK_BACKEND, else d's own; an error if there is no such backend.
func (o *Options) chosenBackend(d Driver) (name string, b Backend, err error) {
	name, what := o.Backend, "--backend "
	if name == "" {
		name, what = os.Getenv("WITHLOCK_BACKEND"), "WITHLOCK_BACKEND="
	}
	if name == "" {
		name = d.Name()
	}
	b, ok := LookupBackend(name)
	if !ok {
		return name, b, UsageError{fmt.Sprintf("%s%q: use %s", what, name, backendNames())}
	}
	return name, b, nil
}

// CheckBackend is Check's part about the backend, for `withlock who`,
// which has no command: the backend chosen must be d's, no other
// backend's flags are given, and d.Configure fills in d's own.
func (o *Options) CheckBackend(d Driver) error {
	name, b, err := o.chosenBackend(d)
	if err != nil {
		return err
	}
	for _, other := range backends {
		if other.Name == name || other.given == nil {
			continue
		}
		if f := other.given(&o.CLI); f != "" {
			return UsageError{fmt.Sprintf("%s needs --backend %s", f, other.Name)}
		}
	}
	if name != d.Name() {
		msg := fmt.Sprintf("--backend %s is run by %s: call withlock", name, b.Binary)
		if b.Binary != backends[0].Binary {
			msg += " (which hands it over) or " + b.Binary
		}
		return UsageError{msg}
	}
	o.Backend = name
	return d.Configure(o)
}

// SeeHelp is the hint after a usage error on a command line for d.
func SeeHelp(d Driver) string {
	if d.Name() == backends[0].Name {
		return "see withlock --help"
	}
	return "see withlock --backend " + d.Name() + " --help"
}

// chosenBackend returns the backend args (withlock's flags, before the
// first "--") or $WITHLOCK_BACKEND choose. As in kong, the last --backend
// wins; a flag wins over the environment. A value of "--" is not taken (it
// ends the flags), so the command's own arguments are never read.
func chosenBackend(args []string) (v string, fromEnv bool) {
	set := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "--backend":
			if i+1 < len(args) && args[i+1] != "--" {
				v, set = args[i+1], true
				i++
			}
		case len(a) > len("--backend=") && a[:len("--backend=")] == "--backend=":
			v, set = a[len("--backend="):], true
		}
	}
	if !set {
		return os.Getenv("WITHLOCK_BACKEND"), true
	}
	return v, false
}

// Dispatch hands a command line whose backend another program serves to
// that program, by exec, and returns only on failure (done, with the exit
// code); for the local backend it returns done == false and withlock goes
// on. An unknown $WITHLOCK_BACKEND is refused here (an unknown --backend
// is refused by the parser). The local path pays one scan of its flags.
//
// It runs before runner.Notify: the exec then follows the Go runtime's
// start with nothing in between, no signal goroutine started and stopped
// again (about 1 ms and a dozen thread wake-ups per etcd call on a 2-core
// machine: docs/etcd.md, "Cost per call"). A TERM, INT or HUP before the
// exec kills withlock, as it would any program that execs (env, nice), and
// so does QUIT, which has the kernel's default action until Notify
// (internal/earlyquit), not the runtime's goroutine dump.
func Dispatch(args []string) (code int, done bool) {
	name, fromEnv := chosenBackend(args)
	if name == "" || name == backends[0].Name {
		return 0, false // the local path: nothing more to pay
	}
	b, ok := LookupBackend(name)
	switch {
	case ok && b.Binary != backends[0].Binary:
		err := runner.ExecCompanion(b.Binary, b.Binary, args)
		return handOverFailed(err, fmt.Sprintf("--backend %s needs %s", b.Name, b.Binary),
			runner.CompanionHint(b.Binary)), true
	case !ok && fromEnv:
		out := &safetext.Printer{Prog: "withlock"}
		out.Errorf("WITHLOCK_BACKEND=%q: use %s", name, backendNames())
		return runner.ExitFailure, true
	}
	return 0, false
}

// handOverFailed reports that withlock could not exec a companion
// binary (runner.ExecCompanion's error err): need says what needs it, hint how to
// install it.
func handOverFailed(err error, need, hint string) int {
	out := &safetext.Printer{Prog: "withlock"}
	if errors.Is(err, runner.ErrCompanionNotFound) {
		out.Errorf("%s, which is not installed next to withlock or on PATH", need)
		out.Hintf("%s", hint)
		return runner.ExitFailure
	}
	out.Errorf("%v", err)
	return runner.ExitFailure
}
