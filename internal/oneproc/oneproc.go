// Package oneproc runs the program on one P (GOMAXPROCS=1) unless the
// environment sets GOMAXPROCS to a number the runtime takes (a positive
// integer; the runtime ignores anything else, and so does this package).
// Importing it for its side effect is enough.
package oneproc

import (
	"os"
	"runtime"
	"strconv"
)

func init() {
	if n, err := strconv.ParseInt(os.Getenv("GOMAXPROCS"), 10, 32); err != nil || n <= 0 {
		runtime.GOMAXPROCS(1)
	}
}
