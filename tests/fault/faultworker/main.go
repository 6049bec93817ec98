// Command faultworker is the critical section of the fault tests. Unlike
// tests/csworker it stays correct when it is killed with SIGKILL in the
// middle of its critical section, which is exactly what the fault tests do.
//
// Run under withlock, it claims one marker file per post it works on and
// per slot (WITHLOCK_SLOT, one POOL:CAP argument per pool, in --slots
// order). A post's marker is keyed on the file the worker opens
// (post-DEV-INO: its own resolution of the path, symlinks and all), never
// on what withlock says it locked, so two holders of one post through
// different spellings collide on one marker; a WITHLOCK_PATHS that is not
// the sorted symlink-free paths of the posts is recorded too. A marker is
// created atomically with link(2) from
// a temp file and names its owner: "PID STARTTICKS" (the owner's start time
// in clock ticks since boot, to tell a recycled PID). When a marker already
// exists, the worker moves it aside with rename(2) (atomic: of two claimants
// only one gets it) and reads its owner:
//
//   - the owner is still alive (and not a zombie): two live processes are in
//     the same critical section — an overlap, recorded in VIOLATIONS;
//   - the owner is dead: it was killed inside its critical section and left
//     the marker behind. That is not an overlap: a lock held by the command
//     is released only when the command has exited (withlock closes its own
//     copies after reaping it), so the owner was dead before this worker
//     could take the lock. The stale marker is dropped and the claim retried.
//
// A slot index at or above the pool's CAP is recorded as "pool over cap".
// The worker appends "e" to COUNT once it is inside its critical section
// (so sections whose worker is then killed are counted too), sleeps a
// random time up to MAXSLEEP_MS, removes its markers and exits 0.
//
// If FAULT_PIDFILE is set, the worker first writes "PID STARTTICKS" there
// (atomically), so that the test can find and kill it.
//
// Usage: faultworker MARKDIR MAXSLEEP_MS [POOL:CAP...] [-- POST...]  (each
// POST must exist)
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: faultworker MARKDIR MAXSLEEP_MS [POOL:CAP...]")
		os.Exit(2)
	}
	mark := os.Args[1]
	maxSleep, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultworker: bad MAXSLEEP_MS:", err)
		os.Exit(2)
	}
	me := fmt.Sprintf("%d %d", os.Getpid(), startTicks(os.Getpid()))
	if pf := os.Getenv("FAULT_PIDFILE"); pf != "" {
		writeAtomic(pf, me)
	}
	pools, posts := os.Args[3:], []string(nil)
	if i := slices.Index(pools, "--"); i >= 0 {
		pools, posts = pools[:i], pools[i+1:]
	}
	keys, resolved := postKeys(mark, posts)
	var reported []string
	if err := json.Unmarshal([]byte(os.Getenv("WITHLOCK_PATHS")), &reported); err != nil {
		violation(mark, "bad WITHLOCK_PATHS: "+err.Error())
	} else if posts != nil && !slices.Equal(reported, resolved) {
		violation(mark, fmt.Sprintf("withlock says it locked %q, the posts opened are %q", reported, resolved))
	}
	if len(pools) > 0 {
		idx := strings.Split(os.Getenv("WITHLOCK_SLOT"), ",")
		if len(idx) != len(pools) {
			violation(mark, fmt.Sprintf("WITHLOCK_SLOT=%q for %d pools", os.Getenv("WITHLOCK_SLOT"), len(pools)))
		}
		for i, spec := range pools {
			name, capS, _ := strings.Cut(spec, ":")
			capN, _ := strconv.Atoi(capS)
			if i >= len(idx) {
				break
			}
			n, err := strconv.Atoi(idx[i])
			if err != nil || n < 0 || n >= capN {
				violation(mark, fmt.Sprintf("pool over cap: pool %s slot %q with cap %d", name, idx[i], capN))
				continue
			}
			keys = append(keys, fmt.Sprintf("pool-%s-%d", name, n))
		}
	}
	var made []string
	for _, k := range keys {
		if claim(mark, k, me) {
			made = append(made, k)
		}
	}
	appendTo(filepath.Join(mark, "COUNT"), "e")
	if maxSleep > 0 {
		time.Sleep(time.Duration(rand.IntN(maxSleep*1000)) * time.Microsecond)
	}
	for _, k := range made {
		os.Remove(filepath.Join(mark, k))
	}
}

// postKeys opens each post and returns the marker keys of the distinct
// files (post-DEV-INO) and their symlink-free paths, sorted and unique as
// withlock reports them.
func postKeys(mark string, posts []string) (keys, resolved []string) {
	seen := map[string]bool{}
	for _, p := range posts {
		f, err := os.Open(p)
		if err != nil {
			violation(mark, "cannot open the post: "+err.Error())
			continue
		}
		var st unix.Stat_t
		err = unix.Fstat(int(f.Fd()), &st)
		f.Close()
		if err != nil {
			violation(mark, "cannot stat the post: "+err.Error())
			continue
		}
		if k := fmt.Sprintf("post-%d-%d", st.Dev, st.Ino); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		abs, _ := filepath.Abs(p)
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			resolved = append(resolved, r)
		} else {
			violation(mark, "cannot resolve the post: "+err.Error())
		}
	}
	slices.Sort(resolved)
	return keys, slices.Compact(resolved)
}

// claim creates the marker key owned by me; it reports false after
// recording an overlap.
func claim(mark, key, me string) bool {
	tmp := filepath.Join(mark, fmt.Sprintf(".tmp-%d-%s", os.Getpid(), key))
	if err := os.WriteFile(tmp, []byte(me), 0o644); err != nil {
		violation(mark, "cannot write a marker: "+err.Error())
		return false
	}
	defer os.Remove(tmp)
	target := filepath.Join(mark, key)
	for try := 0; try < 1000; try++ {
		err := os.Link(tmp, target)
		if err == nil {
			return true
		}
		if !errors.Is(err, fs.ErrExist) {
			violation(mark, "cannot link a marker: "+err.Error())
			return false
		}
		grave := filepath.Join(mark, fmt.Sprintf(".grave-%d-%s-%d", os.Getpid(), key, try))
		if err := os.Rename(target, grave); err != nil {
			continue // its owner removed it meanwhile: try again
		}
		owner, _ := os.ReadFile(grave)
		os.Remove(grave)
		var pid int
		var ticks uint64
		fmt.Sscanf(string(owner), "%d %d", &pid, &ticks)
		if alive(pid, ticks) {
			violation(mark, fmt.Sprintf("overlap on %s: held by live pid %d too", key, pid))
			return false
		}
		// A stale marker of a worker killed inside its section.
	}
	violation(mark, "could not claim "+key+" after 1000 tries")
	return false
}

// alive reports whether pid is running, is not a zombie and started at
// ticks.
func alive(pid int, ticks uint64) bool {
	if pid <= 0 {
		return false
	}
	state, start, ok := stat(pid)
	return ok && state != 'Z' && state != 'X' && start == ticks
}

func startTicks(pid int) uint64 {
	_, t, _ := stat(pid)
	return t
}

// stat reads the state and start time (field 22) of /proc/PID/stat.
func stat(pid int) (byte, uint64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+2:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	return f[0][0], t, err == nil
}

func writeAtomic(name, s string) {
	tmp := name + ".tmp"
	if os.WriteFile(tmp, []byte(s), 0o644) == nil {
		os.Rename(tmp, name)
	}
}

func violation(mark, msg string) {
	appendTo(filepath.Join(mark, "VIOLATIONS"), fmt.Sprintf("faultworker pid %d: %s\n", os.Getpid(), msg))
}

func appendTo(name, s string) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(3)
	}
	f.WriteString(s)
	f.Close()
}
