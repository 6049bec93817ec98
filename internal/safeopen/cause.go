//go:build linux

package safeopen

import (
	"errors"
	"io/fs"
	"os"
)

// Cause is the OS error under err's *fs.PathError (what this package
// returns) or *os.LinkError (a rename), for a message that names the path
// itself: "journal /x/j.jsonl: permission denied" rather than "journal
// /x/j.jsonl: open /x/j.jsonl: permission denied". Any other err is
// returned as it is.
func Cause(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Err
	}
	return err
}
