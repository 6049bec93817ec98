// Command csworker is the critical section of the stress test. Run under
// withlock, it claims a marker file for every path and slot it was given
// with O_CREAT|O_EXCL: if a marker already exists, another holder is inside
// the same critical section, and the overlap is recorded. Markers are
// removed before it exits, i.e. while the locks are still held.
//
// Usage: csworker MARKDIR [POOLNAME...]   (paths from WITHLOCK_PATHS, slot
// indices from WITHLOCK_SLOT, one per POOLNAME)
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	mark := os.Args[1]
	var paths []string
	if err := json.Unmarshal([]byte(os.Getenv("WITHLOCK_PATHS")), &paths); err != nil {
		fail(mark, "bad WITHLOCK_PATHS: "+err.Error())
	}
	var names []string
	for _, p := range paths {
		h := sha256.Sum256([]byte(p))
		names = append(names, "path-"+hex.EncodeToString(h[:8]))
	}
	if slot := os.Getenv("WITHLOCK_SLOT"); slot != "" {
		idx := strings.Split(slot, ",")
		for i, pool := range os.Args[2:] {
			names = append(names, "pool-"+pool+"-"+idx[i])
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
