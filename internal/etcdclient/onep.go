//go:build linux

package etcdclient

import (
	"os"
	"runtime"
	"strconv"
)

// OneP runs the program on one P (GOMAXPROCS=1) unless the environment
// sets GOMAXPROCS to a number the runtime takes (a positive integer; the
// runtime ignores anything else, and so does OneP). The etcd binaries call
// it first thing in main: a call is a short client that mostly waits, and
// with two Ps the runtime wakes and parks a thread at each goroutine
// hand-off (docs/log.md, 2026-12-02). It is a call, not an init, so that
// the packages and tests that import etcdclient keep every P.
func OneP() {
	if n, err := strconv.ParseInt(os.Getenv("GOMAXPROCS"), 10, 32); err != nil || n <= 0 {
		runtime.GOMAXPROCS(1)
	}
}
