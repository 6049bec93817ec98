// Package oneproc runs the program on one P (GOMAXPROCS=1) unless the
// environment sets GOMAXPROCS. Importing it for its side effect is enough.
package oneproc

import (
	"os"
	"runtime"
)

func init() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
}
