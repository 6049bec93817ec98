//go:build linux

package journal

import (
	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
)

// claimFile is the lock file of a gate's period claim (ClaimPeriod).
const claimFile = "period.lock"

// ClaimPeriod takes, without waiting, the gate's period claim on this
// host: an exclusive flock on gates/NAME/period.lock, opened through the
// gate directory's descriptor (never a symlink, never another user's
// file) and only the gate's owner's (lockfile's OpenPrivate: 0600, so no
// other user can hold it and stop the gate). A gate with once_per holds it from the moment it decides its
// period is not done until its run has ended and been recorded, so that
// two cron-gate processes of the gate (cron's tick and a trigger, or a
// tick that comes while a long run goes on) never both run in one
// period. release drops it (the file stays); held is false when another
// process holds it. The lock is close-on-exec: the command does not
// inherit it, and it vanishes with cron-gate.
func (j *Journal) ClaimPeriod() (release func(), held bool, err error) {
	l, err := lockfile.In(j.dir).OpenPrivate(claimFile)
	if err != nil {
		return nil, false, err
	}
	ok, err := l.TryLock()
	if err != nil || !ok {
		l.Close()
		return nil, ok, err
	}
	return func() { l.Close() }, true, nil
}

// ClaimFile identifies the gate's period claim file, for a view that
// looks up its holder in /proc/locks without taking it: its path (for
// messages), device and inode; ok is false when it does not exist (no
// once_per run has been made) or is not a regular file.
func (j *Journal) ClaimFile() (path string, dev, ino uint64, ok bool) {
	st, err := j.dir.Stat(claimFile)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", 0, 0, false
	}
	return j.dir.Join(claimFile), st.Dev, st.Ino, true
}
