//go:build linux

package lockset

import (
	"context"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/lockfile"
)

// watcher wakes a waiter when a lock file it wants is closed. A flock is
// released exactly when the last descriptor of its open file description
// goes away, which the kernel reports to inotify as IN_CLOSE_WRITE or
// IN_CLOSE_NOWRITE on the file (process exit included). So a waiter sleeps
// in poll(2) and retries within microseconds of the release, without polling
// the lock. ctx's end is delivered through an eventfd.
type watcher struct {
	fd    int            // inotify, -1 if unavailable
	ev    int            // eventfd signalled when ctx ends
	wds   map[string]int // dir -> watch descriptor
	names map[int]map[string]bool
	// anyWrite is a watch (the queue dir) where a write-close or a
	// removal of any file wakes the wait; -1 if none.
	anyWrite int
	// mu guards ev against a kick after close.
	mu     sync.Mutex
	closed bool
}

// kick wakes the current or next wait (from another goroutine: a flock(2)
// wait that returned).
func (w *watcher) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && w.ev >= 0 {
		var one = [8]byte{1}
		unix.Write(w.ev, one[:])
	}
}

func newWatcher(dirs []string) *watcher {
	w := &watcher{fd: -1, ev: -1, wds: map[string]int{}, anyWrite: -1}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return w // e.g. too many inotify instances: poll only
	}
	w.fd = fd
	for _, d := range dirs {
		if _, ok := w.wds[filepath.Clean(d)]; ok {
			continue
		}
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CLOSE_WRITE|unix.IN_CLOSE_NOWRITE|unix.IN_DELETE|unix.IN_ONLYDIR)
		if err == nil {
			w.wds[filepath.Clean(d)] = wd
		}
	}
	if ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		w.ev = ev
	}
	return w
}

func (w *watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
	if w.ev >= 0 {
		unix.Close(w.ev)
	}
}

// want sets the files whose close should wake the next wait.
func (w *watcher) want(dir string, names []string) {
	w.names = map[int]map[string]bool{}
	w.anyWrite = -1
	wd, ok := w.wds[filepath.Clean(dir)]
	if !ok {
		return
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	w.names[wd] = set
}

// alsoAny adds the queue dir to what wakes the next wait: a ticket
// written and closed, or removed, by its waiter (IN_CLOSE_WRITE,
// IN_DELETE). Readers open tickets and the dir read-only, so reading the
// queue (ours or another waiter's) wakes nobody.
func (w *watcher) alsoAny(dir string) {
	if wd, ok := w.wds[filepath.Clean(dir)]; ok {
		w.anyWrite = wd
	}
}

// wait returns when a wanted file was closed, when poll has passed, or with
// ctx's error when ctx ends.
func (w *watcher) wait(ctx context.Context, poll time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.ev >= 0 {
		stop := context.AfterFunc(ctx, w.kick)
		defer stop()
	}
	end := time.Now().Add(poll)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		left := time.Until(end)
		if left <= 0 {
			return ctx.Err()
		}
		fds := []unix.PollFd{}
		if w.fd >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(w.fd), Events: unix.POLLIN})
		}
		if w.ev >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(w.ev), Events: unix.POLLIN})
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			// Either poll is unusable or the fallback interval passed.
			if err != nil {
				time.Sleep(left)
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.ev >= 0 && fds[len(fds)-1].Revents&unix.POLLIN != 0 {
			// Kicked (ctx's end is handled above): reset the
			// counter and return.
			var b [8]byte
			unix.Read(w.ev, b[:])
			return nil
		}
		if w.fd >= 0 && w.drain(buf) {
			return nil
		}
	}
}

// drain reads every queued event and reports whether one was wanted.
func (w *watcher) drain(buf []byte) bool {
	hit := false
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return hit
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameLen := int(ev.Len)
			end := off + unix.SizeofInotifyEvent + nameLen
			if end > n {
				break
			}
			name := buf[off+unix.SizeofInotifyEvent : end]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				hit = true
			} else if int(ev.Wd) == w.anyWrite && len(name) > 0 && ev.Mask&(unix.IN_CLOSE_WRITE|unix.IN_DELETE) != 0 {
				hit = true
			} else if set := w.names[int(ev.Wd)]; set != nil && set[string(name)] {
				hit = true
			}
			off = end
		}
	}
}

// waitLock waits for the busy lock file l in flock(2) itself, as flock -w
// does: the kernel wakes the waiter as the holder releases, by close, by
// LOCK_UN (which inotify does not report) or by exiting. The blocking call
// runs in a goroutine of its own, on a duplicate of the descriptor the set
// tries (the lock it gets is the set's own: the next attempt finds it
// held), so that ctx's end is not delayed by it. It returns when the lock
// was taken (or the call failed: the next attempt says why) or ctx ends.
//
// A blocked flock cannot be interrupted (Go's signal handlers restart it),
// so a call still blocked when ctx ends stays behind: withlock's wait is
// over then and it exits (or runs the command, if the last attempt got the
// lock, which ends the call at once); if the call gets the lock later, it
// holds it only until its duplicate is closed, at once. So at most one call
// is ever outstanding, and WaitChange waits for it again rather than start
// another (blocked, blockedOn).
func (c *localClaim) waitLock(ctx context.Context, l *lockfile.Lock) error {
	if c.blocked == nil {
		done, err := flockWait(l, nil)
		if err != nil {
			return err
		}
		c.blocked, c.blockedOn = done, l
	}
	select {
	case err := <-c.blocked:
		if err == nil {
			c.got = c.blockedOn
		}
		c.blocked, c.blockedOn = nil, nil
		if err != nil {
			// A file system that refuses to wait in flock (ENOLCK):
			// inotify and the poll from now on, never a spin.
			c.noBlock = true
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flockWait starts a blocking flock(2) call on a duplicate of l's
// descriptor, in a goroutine of its own: the lock it gets is l's open file
// description's, so l holds it once the call returns (the duplicate is
// closed then). The call's result arrives on the channel returned, after
// which then (if not nil) runs.
func flockWait(l *lockfile.Lock, then func()) (chan error, error) {
	fd, err := unix.FcntlInt(l.File().Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := unix.Flock(fd, unix.LOCK_EX)
		for err == unix.EINTR {
			err = unix.Flock(fd, unix.LOCK_EX)
		}
		unix.Close(fd)
		done <- err
		if then != nil {
			then()
		}
	}()
	return done, nil
}

// busyFile returns the busy lock file to wait for in flock(2), or nil to
// wait through inotify: the last attempt found no path lock busy, or a
// blocked call is outstanding for another file (waitLock), or blocking
// failed before.
func (c *localClaim) busyFile() *lockfile.Lock {
	if c.paths == nil || c.noBlock {
		return nil
	}
	l := c.paths.Busy()
	if l == nil || (c.blocked != nil && c.blockedOn != l) {
		return nil
	}
	return l
}

// WaitChange implements Claim. The first call only sets up the watches and
// returns at once, so that the retry that follows happens after the watches
// exist and no release between the failed attempt and the watch is missed.
func (c *localClaim) WaitChange(ctx context.Context, poll time.Duration) error {
	if c.w == nil {
		// A waiter: take a ticket in the queue, so that later sets that
		// intersect ours yield to us (queue_linux.go).
		// A queue that cannot be joined (the lock dir removed since the
		// attempt, a file planted as withlock-queue, another user's queue
		// dir this one may not write) turns the queue off: fairness is
		// lost, never exclusion, and the wait goes on, on the
		// descriptors the attempt kept.
		if c.q != nil {
			c.q.enter()
		}
		var dirs []string
		if c.dir != nil {
			dirs = append(dirs, c.dir.Path)
		}
		if c.q != nil && c.q.dir != nil {
			dirs = append(dirs, c.q.dir.Path)
		}
		for _, p := range c.pools {
			d, _ := p.Watch()
			dirs = append(dirs, d)
		}
		c.w = newWatcher(dirs)
		return ctx.Err()
	}
	switch {
	case c.busyPool >= 0 && c.busyPool < len(c.pools):
		dir, _ := c.pools[c.busyPool].Watch()
		c.w.want(dir, c.busyNames)
	case c.busyPool == -2:
		c.w.want("", nil) // only the queue below
	default:
		if l := c.busyFile(); l != nil {
			return c.waitLock(ctx, l)
		}
		c.w.want(filepath.Dir(c.busyLock), []string{filepath.Base(c.busyLock)})
	}
	if c.q != nil && c.q.dir != nil {
		// A waiter ahead of us leaving (or dying) may let us in.
		c.w.alsoAny(c.q.dir.Path)
	}
	return c.w.wait(ctx, poll)
}
