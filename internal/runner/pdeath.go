//go:build linux

package runner

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// KillWithParent makes the kernel kill the command (SIGKILL) the moment
// this process dies, for a wrapper whose locks cannot outlive it (an etcd
// lease: docs/etcd.md, "Across hosts (etcd)"). The command is started with
// a parent-death signal (prctl PR_SET_PDEATHSIG, set between fork and exec;
// the child checks that its parent still lives after setting it, so a
// parent that died in between is not missed). The signal fires when the
// thread that forked the command exits, which in Go can come before the
// process does (go.dev/issue/27505), so the calling goroutine is locked to
// its OS thread for good: call KillWithParent, then Start, from the same
// goroutine, one that lives as long as the process. It reaches the
// command's own process only, not processes the command starts.
//
// It costs nothing at start: no helper program is run (util-linux's
// `setpriv --pdeathsig`, used before, cost an exec of a dynamically linked
// program and its locale files on every call).
func (c *Child) KillWithParent() {
	runtime.LockOSThread()
	c.cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
}
