//go:build linux

package runner

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// KillWithParent makes the kernel kill the command (SIGKILL) the moment
// this process dies, for a wrapper whose locks cannot outlive it (an etcd
// lease: docs/etcd.md, "Across hosts (etcd)"). The command is started through
// util-linux's `setpriv --pdeathsig KILL --`. The signal fires when the
// thread that forked the command exits, which in Go can come before the
// process does (go.dev/issue/27505), so the calling goroutine is locked to
// its OS thread for good: call KillWithParent, then Start, from the same
// goroutine. It reaches the command's own process only, not processes the
// command starts. It returns false, and the command runs unprotected, when
// setpriv is not installed.
func (c *Child) KillWithParent() bool {
	runtime.LockOSThread()
	sp := setpriv()
	if sp == "" {
		return false
	}
	argv := append([]string{sp, "--pdeathsig", "KILL", "--"}, c.spec.Argv...)
	c.spec.Argv = argv
	c.cmd.Path, c.cmd.Args = sp, argv
	return true
}

// setpriv finds util-linux's setpriv (cron may give no PATH).
func setpriv() string {
	if p, err := exec.LookPath("setpriv"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/setpriv", "/bin/setpriv"} {
		if unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	return ""
}
