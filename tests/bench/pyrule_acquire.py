#!/usr/bin/env python3
"""The Python workers' lock rule, taking a whole set of path locks at once.

Reference for the 10,000-path benchmark (tests/bench/run.sh): what a Python
worker does to lock N paths, so that `withlock --paths-from FILE -- true`
can be compared with it.

usage: pyrule_acquire.py LOCKDIR PATHSFILE

PATHSFILE holds one path per line. The locking is the seed's own code,
tests/pyrule/blog_file_lock.py (try_acquire_file_locks): every path
canonicalised with Path(p).resolve(strict=False), the set sorted by str,
each lock file LOCKDIR/sha256(path).lock opened O_CREAT|O_RDWR 0o664 and
locked with flock(LOCK_EX|LOCK_NB); then release() closes them all. Exit 0
if every lock was taken, 75 (like withlock's skip code) if one was busy.
"""
import os
import resource
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the repo
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyrule"))
from blog_file_lock import try_acquire_file_locks  # noqa: E402  the seed's code


def main():
    lockdir, listfile = sys.argv[1], sys.argv[2]
    with open(listfile, encoding="utf-8") as f:
        paths = [line.rstrip("\n") for line in f]
    paths = [p for p in paths if p]

    # 10,000 locks are 10,000 open descriptors: make room, as a worker would
    # have to (withlock's Go runtime raises the soft limit by itself).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(paths) + 64
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (need if hard == resource.RLIM_INFINITY else min(need, hard), hard))

    os.makedirs(lockdir, exist_ok=True)
    held = try_acquire_file_locks(paths, lock_dir=lockdir)
    if held is None:
        print("busy (or could not open a lock file)", file=sys.stderr)
        return 75
    held.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
