// Command floor is the 10,000-path benchmark's lower bound: it takes the
// same lock files as withlock and the Python rule with nothing but the
// system calls that cannot be avoided (one lstat per path plus one per
// directory, then openat + flock per lock, then close), and then exits. It
// is NOT a correct implementation of the rule: it follows no symlinks and
// trusts the paths to be absolute and clean. It only shows what this
// machine allows.
//
// usage: floor [-pregrow] LOCKDIR PATHSFILE
//
// -pregrow enlarges the descriptor table once, up front. Without it the
// kernel doubles the table as the descriptors are opened (64, 128, ...,
// 16384), and in a multi-threaded process, which every Go program is, each
// doubling waits for an RCU grace period (fs/file.c expand_fdtable calls
// synchronize_rcu when the table is shared): several milliseconds each on a
// small VM. A single-threaded Python process never pays that.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

func main() {
	pregrow := flag.Bool("pregrow", false, "enlarge the descriptor table once, before opening")
	flag.Parse()
	if err := run(flag.Arg(0), flag.Arg(1), *pregrow); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(lockdir, list string, pregrow bool) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	defer f.Close()
	var paths []string
	dirs := map[string]bool{}
	var st unix.Stat_t
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := sc.Text()
		if p == "" {
			continue
		}
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
			if err := unix.Lstat(d, &st); err != nil {
				return err
			}
		}
		if err := unix.Lstat(p, &st); err != nil && err != unix.ENOENT {
			return err
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)

	if err := os.MkdirAll(lockdir, 0o775); err != nil {
		return err
	}
	dfd, err := unix.Open(lockdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if pregrow {
		// F_DUPFD_CLOEXEC takes the lowest free descriptor >= the
		// argument, so unlike dup2 it never closes one in use; the table
		// is enlarged to fit it, once.
		fd, err := unix.FcntlInt(uintptr(dfd), unix.F_DUPFD_CLOEXEC, len(paths)+64)
		if err != nil {
			return fmt.Errorf("pregrow: %w", err)
		}
		unix.Close(fd)
	}
	fds := make([]int, 0, len(paths))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, p := range paths {
		h := sha256.Sum256([]byte(p))
		name := hex.EncodeToString(h[:]) + ".lock"
		fd, err := unix.Openat(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o664)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}
