//go:build linux

package statefile

// This file opens cron-gate's state dir (gate.StateDirFor), the
// directory every state file lives in: the journals (package journal),
// the pauses (gate.PauseFile), the watchdog's state (package watch) and
// the short locks beside them. It may sit in world-writable /tmp or
// /var/tmp, so it is reached as a lock dir is (package safeopen): a
// directory opened to be written is the caller's or root's, and every
// file below it is opened through its descriptor.

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/internal/safeopen"
)

// DirMode is the state dir's and its gate dirs' mode when created: readable
// by all, so that a status view running as another user can read them.
const DirMode = 0o755

// DirOptions is how a state dir and the directories under it are opened:
// create makes missing ones (DirMode); read is for read-only views, which
// may be of another user's state (status, the dashboard) and so accept
// any owner (safeopen.TrustAny).
func DirOptions(create, read bool) safeopen.DirOptions {
	o := safeopen.DirOptions{What: "state dir", Create: create, Mode: DirMode}
	if read {
		o.Trust = safeopen.TrustAny
	}
	return o
}

// OpenDir opens the state dir to write in it, creating it if it is missing.
// Its errors wrap safeopen.ErrUnsafe when it, or a directory or symlink
// above it, is another user's. While ShareDir(path) is in effect, the walk
// is made once and every OpenDir gets its own handle on the directory it
// reached.
func OpenDir(path string) (*safeopen.Dir, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.path != path || path == "" {
		return openStateDir(path)
	}
	if shared.dir == nil {
		d, err := openStateDir(path)
		if err != nil {
			return nil, err
		}
		shared.dir = d
	}
	return shared.dir.Dup()
}

func openStateDir(path string) (*safeopen.Dir, error) {
	sd, err := safeopen.OpenDir(path, DirOptions(false, false))
	if errors.Is(err, fs.ErrNotExist) {
		sd, err = safeopen.OpenDir(path, DirOptions(true, false))
	}
	if err != nil {
		return nil, err
	}
	if err := checkOneUser(sd); err != nil {
		sd.Close()
		return nil, err
	}
	return sd, nil
}

// checkOneUser refuses, for writing, a state dir that everyone may write
// (even with the sticky bit, as /tmp itself): a state dir is one user's
// (docs/security.md, "A state dir is one user's"). Another user could
// otherwise create a gate's directory or a lock file there first, which
// the walk and lockfile's OpenPrivate then refuse: every run of that gate
// would fail. A group-writable one is accepted (user private groups make
// them with umask 002); its files must still be the caller's.
func checkOneUser(sd *safeopen.Dir) error {
	var st unix.Stat_t
	if err := safeopen.IgnoringEINTR(func() error { return unix.Fstat(sd.Fd(), &st) }); err != nil {
		return fmt.Errorf("state dir %s: %w", sd.Path, err)
	}
	if st.Mode&unix.S_IWOTH != 0 {
		return fmt.Errorf("state dir %s is writable by everyone (mode %04o); a state dir is one user's, and another could plant its gates' files there (chmod o-w, or use a directory of your own): %w",
			sd.Path, st.Mode&0o7777, safeopen.ErrUnsafe)
	}
	return nil
}

// shared is the state dir ShareDir keeps open.
var shared struct {
	mu   sync.Mutex
	path string
	dir  *safeopen.Dir // nil until the first OpenDir
}

// ShareDir makes OpenDir(path) walk path once until release is called: one
// cron-gate run reads the pauses and writes the journal in the same state
// dir, and walking it component by component twice would cost the run
// twice. The directory reached first is the one used (never re-resolved:
// a component swapped in between changes nothing). For a short-lived
// caller only (one run); a long-lived one (the dashboard, the watchdog)
// opens the state dir afresh each time, so that a state dir moved or
// replaced is seen.
func ShareDir(path string) (release func()) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir != nil {
		shared.dir.Close()
	}
	shared.path, shared.dir = path, nil
	return func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		if shared.path == path {
			if shared.dir != nil {
				shared.dir.Close()
			}
			shared.path, shared.dir = "", nil
		}
	}
}

// OpenDirToRead opens the state dir to read it, whoever owns it; it creates
// nothing (errors.Is(err, fs.ErrNotExist) when it is missing). While
// ShareDir(path) is in effect it gets a handle on the directory OpenDir reaches
// (walked once, created if missing, as the run's journal would create it
// right after), or, when OpenDir refuses it (another user's), walks as
// before.
func OpenDirToRead(path string) (*safeopen.Dir, error) {
	shared.mu.Lock()
	if shared.path == path && path != "" {
		if shared.dir == nil {
			if d, err := openStateDir(path); err == nil {
				shared.dir = d
			}
		}
		if shared.dir != nil {
			defer shared.mu.Unlock()
			return shared.dir.Dup()
		}
	}
	shared.mu.Unlock()
	return safeopen.OpenDir(path, DirOptions(false, true))
}

// FileErr words an error about the state file at path, "WHAT PATH: cause"
// (what is, e.g., "journal"); a *safeopen.FileError (not a regular file,
// too large) names the file itself.
func FileErr(what, path string, err error) error {
	if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
		return fmt.Errorf("%s %w", what, fe)
	}
	return fmt.Errorf("%s %s: %w", what, path, safeopen.Cause(err))
}
