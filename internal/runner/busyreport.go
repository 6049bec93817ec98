//go:build linux

package runner

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The busy report is how a withlock that found its locks busy tells the
// cron-gate that ran it which locks its line takes, however it was
// started (directly, through sh -c, from a script): cron-gate hands its
// command a memory file (memfd "cron-gate-busy") and names its descriptor
// in $CRON_GATE_BUSY_FD; withlock takes both out of what its own command
// inherits (TakeBusyReport) and, when it exits with the skip code, writes
// its locks there (BusyReport.Write); cron-gate reads them after a run
// that ended with the skip code (ReadBusyReport) into the end record, so
// that status, why and the dashboard can look up who holds them. Nothing
// parses the other tool's command line. The report is the job's own
// output: cron-gate reads at most MaxBusyReport bytes, and keeps nothing
// of a report it cannot take whole.

// BusyEnv names the descriptor of the busy report in a command's
// environment.
const BusyEnv = "CRON_GATE_BUSY_FD"

// busyName is the memory file's name (/proc/self/fd/N reads
// "/memfd:cron-gate-busy (deleted)"): withlock writes only into a
// descriptor that is one.
const busyName = "cron-gate-busy"

// MaxBusyPaths bounds the path locks a report names (BusyReportData.More
// counts the rest); every slot of every pool is named.
const MaxBusyPaths = 64

// MaxBusyReport bounds the bytes read of a report, and maxBusyLocks the
// locks taken from it.
const (
	MaxBusyReport = 1 << 20
	maxBusyLocks  = 4096
)

// BusyLock is one lock file a busy withlock line takes.
type BusyLock struct {
	Path string `json:"path,omitempty"` // a path lock: the canonical path (the Python rule)
	Pool string `json:"pool,omitempty"` // a slot: its pool's template, "{i}" included
	File string `json:"file"`           // the lock file, absolute
}

// BusyReportData is what a report holds (version 1).
type BusyReportData struct {
	V     int        `json:"v"`
	Locks []BusyLock `json:"locks"`
	More  int        `json:"more,omitempty"` // path locks beyond MaxBusyPaths
}

// NewBusyReport returns the memory file for a command's busy report and
// the environment entry naming it as descriptor fd in the command (the
// caller hands the file over as that descriptor, runner.Spec.ExtraFiles).
// An error leaves the run without a report (a kernel without memfd).
func NewBusyReport(fd int) (*os.File, string, error) {
	mfd, err := unix.MemfdCreate(busyName, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, "", err
	}
	return os.NewFile(uintptr(mfd), busyName), BusyEnv + "=" + strconv.Itoa(fd), nil
}

// ReadBusyReport reads the report a command left in f: nil when there is
// none, or when it is not a whole, valid version-1 report (the command
// may have written anything there).
func ReadBusyReport(f *os.File) *BusyReportData {
	if f == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, MaxBusyReport+1), MaxBusyReport+1))
	if err != nil || len(b) == 0 || len(b) > MaxBusyReport {
		return nil
	}
	return ParseBusyReport(b)
}

// ParseBusyReport parses a report's bytes: nil unless it is one JSON
// object of version 1 whose locks each name an absolute, clean lock file
// (a path lock's path or a slot's pool, not both), at most maxBusyLocks.
func ParseBusyReport(b []byte) *BusyReportData {
	var d BusyReportData
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if dec.Decode(&d) != nil || dec.More() || d.V != 1 || len(d.Locks) == 0 || len(d.Locks) > maxBusyLocks || d.More < 0 {
		return nil
	}
	for _, l := range d.Locks {
		if !filepath.IsAbs(l.File) || filepath.Clean(l.File) != l.File || (l.Path == "") == (l.Pool == "") ||
			strings.ContainsRune(l.File+l.Path+l.Pool, 0) {
			return nil
		}
	}
	return &d
}

// BusyReport is the report a withlock may write (TakeBusyReport).
type BusyReport struct{ f *os.File }

// TakeBusyReport takes the busy report this process was handed, if any,
// out of what its command will inherit: it unsets BusyEnv and marks the
// descriptor close-on-exec. It returns nil when none was handed, or when
// the descriptor named is not the report's memory file (a variable left
// over from elsewhere must never make withlock write into another file).
func TakeBusyReport() *BusyReport {
	v, ok := os.LookupEnv(BusyEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(BusyEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(target, "/memfd:"+busyName+" ") {
		return nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil
	}
	return &BusyReport{f: os.NewFile(uintptr(fd), busyName)}
}

// Write replaces the report with d. Best-effort: the skip code says
// busy whether or not the report could be written.
func (r *BusyReport) Write(d BusyReportData) {
	if r == nil {
		return
	}
	d.V = 1
	b, err := json.Marshal(d)
	if err != nil || len(b) > MaxBusyReport {
		return
	}
	if r.f.Truncate(0) == nil {
		r.f.WriteAt(b, 0)
	}
}
