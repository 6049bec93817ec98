// Command symflip is TestSymlinkFlipRace's attacker (tests/attack_test.go),
// run as another user: it flips DIR/blog, as fast as it can, between
// missing, a symlink to VICTIM and a directory of its own, until DIR/stop
// exists. Every error is ignored: the point is to be in every state as
// often as possible, whatever the other side does.
//
//	symflip DIR VICTIM
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: symflip DIR VICTIM")
		os.Exit(2)
	}
	blog, stop := filepath.Join(os.Args[1], "blog"), filepath.Join(os.Args[1], "stop")
	victim := os.Args[2]
	for n := 0; ; n++ {
		if n%256 == 0 && unix.Access(stop, unix.F_OK) == nil {
			return
		}
		unix.Symlink(victim, blog)
		unix.Unlink(blog)
		unix.Mkdir(blog, 0o755)
		unix.Rmdir(blog)
	}
}
