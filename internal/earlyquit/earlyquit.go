//go:build linux

// Package earlyquit gives SIGQUIT the kernel's default action from the
// first package inits on, until runner.Notify takes the signal over
// (Restore).
//
// The Go runtime installs its own SIGQUIT handler before any package
// init, and its default action prints every goroutine's stack and exits
// 2. A program linking the etcd client spends milliseconds in package
// inits (protobuf descriptors, gRPC) before main can set up its handling:
// a QUIT then (a ^\ at a terminal, a supervisor's `kill -QUIT`) dumped
// stacks (found by an attack session: about one QUIT in five sent in the
// first 15 ms of withlock-etcd). This package has no dependency beyond
// syscall, so it is initialised before those packages (Go initialises
// the ready package with the smallest import path first, and
// "github.com/..." sorts before "go.etcd.io" and "google.golang.org"):
// from then on a QUIT ends the process as it would a C program, killed by
// it, silently. Restore puts the runtime's handler back, exactly as the
// kernel held it, so that signal.Notify can catch QUIT (the runtime,
// believing its handler still installed, would not reinstall it).
package earlyquit

import (
	"syscall"
	"unsafe"
)

var (
	// saved is the runtime's SIGQUIT action as the kernel returned it: an
	// opaque struct sigaction, 32 bytes covering every Linux layout.
	saved [4]uint64
	valid bool
)

func init() {
	var dfl [4]uint64 // SIG_DFL, no flags, an empty mask: all zeros
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGQUIT),
		uintptr(unsafe.Pointer(&dfl)), uintptr(unsafe.Pointer(&saved)), 8, 0, 0)
	valid = e == 0
}

// Restore puts back the Go runtime's SIGQUIT handler (once; later calls do
// nothing). Call it before signal.Notify for SIGQUIT.
func Restore() {
	if !valid {
		return
	}
	valid = false
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGQUIT), uintptr(unsafe.Pointer(&saved)), 0, 8, 0, 0)
}
