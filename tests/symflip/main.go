// Command symflip is TestSymlinkFlipRace's attacker (tests/attack_test.go),
// run as another user: it flips DIR/blog between missing, a symlink to
// VICTIM and a directory of its own, until DIR/stop exists, staying in
// each state for a random 0-300 µs (spinning, not sleeping: a timer is far
// coarser). A check-then-use by name is beaten when the name is missing at
// the check and a symlink for the few calls of the use, so the dwell must
// span several system calls of the victim; flipping at full speed would
// hardly ever hold a state that long. Every error is ignored: the point is
// to be in every state as often as possible, whatever the other side does.
//
//	symflip DIR VICTIM
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

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
		dwell()
		unix.Unlink(blog)
		dwell()
		if n%2 == 0 {
			unix.Mkdir(blog, 0o755)
			dwell()
			unix.Rmdir(blog)
			dwell()
		}
	}
}

func dwell() {
	end := time.Now().Add(time.Duration(rand.IntN(100)) * time.Microsecond)
	for time.Now().Before(end) {
	}
}
