//go:build !linux

package main

// withlock is Linux-only, like everything it is built from: flock(2) locks
// shared with the Python workers, O_PATH and /proc/self/fd, Linux's
// signals and prctl. Without this file a build for another OS would stop
// at pages of type errors in the packages below; with it, at one line
// naming the reason.
var _ = cron_gate_and_withlock_build_on_linux_only
