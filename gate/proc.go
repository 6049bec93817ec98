//go:build linux

package gate

import (
	"os"
	"strconv"
)

// processStartTicks returns the start time of a live process in clock ticks
// since boot, or 0 if there is no such process or it is a zombie. With the
// PID it identifies a process: a recycled PID has another start time.
func processStartTicks(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(legacyProcRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	st, err := legacyParseStat(data)
	if err != nil || st.state == 'Z' || st.state == 'X' {
		return 0
	}
	return st.startTicks
}
