// Command stamp prints CLOCK_REALTIME in nanoseconds: the handoff
// benchmark's waiters run it as their command, so its output is the moment
// the command started (plus this program's own start-up, the same for every
// waiter).
package main

import (
	"os"
	"strconv"
	"time"
)

func main() {
	os.Stdout.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
}
