package safeopen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCause(t *testing.T) {
	for _, c := range []struct {
		err, want error
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: unix.EACCES}, unix.EACCES},
		{fmt.Errorf("journal: %w", &fs.PathError{Op: "open", Path: "/x", Err: unix.ENOENT}), unix.ENOENT},
		{&os.LinkError{Op: "rename", Old: "/a", New: "/b", Err: unix.EXDEV}, unix.EXDEV},
		{unix.EIO, unix.EIO},
		{nil, nil},
	} {
		if got := Cause(c.err); !errors.Is(got, c.want) || got != c.want {
			t.Errorf("Cause(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
