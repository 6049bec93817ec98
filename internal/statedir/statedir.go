//go:build linux

// Package statedir opens cron-gate's state dir (gate.StateDirFor), the
// directory every state file lives in: the journals (package journal),
// the pauses (package pauses), the watchdog's state (package watch) and
// the short locks beside them. It may sit in world-writable /tmp or
// /var/tmp, so it is reached as a lock dir is (package safeopen): a
// directory opened to be written is the caller's or root's, and every
// file below it is opened through its descriptor.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/crongate/crongate/internal/safeopen"
)

// Mode is the state dir's and its gate dirs' mode when created: readable
// by all, so that a status view running as another user can read them.
const Mode = 0o755

// Options is how a state dir and the directories under it are opened:
// create makes missing ones (Mode); read is for read-only views, which
// may be of another user's state (status, the dashboard) and so accept
// any owner (safeopen.TrustAny).
func Options(create, read bool) safeopen.DirOptions {
	o := safeopen.DirOptions{What: "state dir", Create: create, Mode: Mode}
	if read {
		o.Trust = safeopen.TrustAny
	}
	return o
}

// Open opens the state dir to write in it, creating it if it is missing.
// Its errors wrap safeopen.ErrUnsafe when it, or a directory or symlink
// above it, is another user's.
func Open(path string) (*safeopen.Dir, error) {
	sd, err := safeopen.OpenDir(path, Options(false, false))
	if errors.Is(err, fs.ErrNotExist) {
		sd, err = safeopen.OpenDir(path, Options(true, false))
	}
	return sd, err
}

// OpenToRead opens the state dir to read it, whoever owns it; it creates
// nothing (errors.Is(err, fs.ErrNotExist) when it is missing).
func OpenToRead(path string) (*safeopen.Dir, error) {
	return safeopen.OpenDir(path, Options(false, true))
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
