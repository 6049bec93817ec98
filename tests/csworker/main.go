// Command csworker is the critical section of the stress test. Run under
// withlock, it claims a marker file for every post it works on and every
// slot it was given with O_CREAT|O_EXCL: if a marker already exists,
// another holder is inside the same critical section, and the overlap is
// recorded. Markers are removed before it exits, i.e. while the locks are
// still held.
//
// A post's marker is keyed on the post itself, as the worker reaches it:
// the device and inode of the file it opens (its own resolution of the
// path it was given, symlinks and all), never on what withlock says it
// locked. So two holders of one post through different spellings (an
// alias through a symlink and the canonical path) collide on one marker
// even if withlock took two different locks for them. The worker also
// checks that WITHLOCK_PATHS names exactly the posts it opened (their
// symlink-free paths, sorted): a mismatch is recorded as well.
//
// Usage: csworker MARKDIR [POOLNAME...] [-- POST...]   (slot indices from
// WITHLOCK_SLOT, one per POOLNAME; each POST must exist)
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	mark := os.Args[1]
	pools, posts := os.Args[2:], []string(nil)
	if i := slices.Index(pools, "--"); i >= 0 {
		pools, posts = pools[:i], pools[i+1:]
	}
	names, resolved := postMarkers(mark, posts)
	var reported []string
	if err := json.Unmarshal([]byte(os.Getenv("WITHLOCK_PATHS")), &reported); err != nil {
		fail(mark, "bad WITHLOCK_PATHS: "+err.Error())
	} else if posts != nil && !slices.Equal(reported, resolved) {
		fail(mark, fmt.Sprintf("withlock says it locked %q, the posts opened are %q", reported, resolved))
	}
	if slot := os.Getenv("WITHLOCK_SLOT"); slot != "" {
		idx := strings.Split(slot, ",")
		for i, pool := range pools {
			if i < len(idx) {
				names = append(names, "pool-"+pool+"-"+idx[i])
			}
		}
	}
	var made []string
	for _, n := range names {
		f, err := os.OpenFile(filepath.Join(mark, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			fail(mark, fmt.Sprintf("overlap on %s: %v", n, err))
			continue
		}
		f.Close()
		made = append(made, n)
	}
	time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
	for _, n := range made {
		os.Remove(filepath.Join(mark, n))
	}
	appendTo(filepath.Join(mark, "COUNT"), "w")
}

// postMarkers opens each post and returns the marker names of the distinct
// files (post-DEV-INO) and their symlink-free paths, sorted and unique as
// withlock reports them.
func postMarkers(mark string, posts []string) (names, resolved []string) {
	seen := map[string]bool{}
	for _, p := range posts {
		f, err := os.Open(p)
		if err != nil {
			fail(mark, "cannot open the post: "+err.Error())
			continue
		}
		var st unix.Stat_t
		err = unix.Fstat(int(f.Fd()), &st)
		f.Close()
		if err != nil {
			fail(mark, "cannot stat the post: "+err.Error())
			continue
		}
		if n := fmt.Sprintf("post-%d-%d", st.Dev, st.Ino); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
		abs, _ := filepath.Abs(p)
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			resolved = append(resolved, r)
		} else {
			fail(mark, "cannot resolve the post: "+err.Error())
		}
	}
	slices.Sort(resolved)
	return names, slices.Compact(resolved)
}

func fail(mark, msg string) {
	appendTo(filepath.Join(mark, "VIOLATIONS"), fmt.Sprintf("csworker pid %d: %s\n", os.Getpid(), msg))
}

func appendTo(name, s string) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		os.Exit(3)
	}
	f.WriteString(s)
	f.Close()
}
