#!/usr/bin/env python3
"""The Python workers' lock rule, taking a whole set of path locks at once.

Reference for the 10,000-path benchmark (tests/bench/run.sh): what a Python
worker does to lock N paths, done the way the workers do it and nothing
more, so that `withlock --paths-from FILE -- true` can be compared with it.

usage: pyrule_acquire.py LOCKDIR PATHSFILE

PATHSFILE holds one path per line. Every path is canonicalised with
Path(p).resolve(strict=False); the set is sorted (by str, as
tests/pyrule/pyrule.py does); each lock file is LOCKDIR/sha256(path).lock,
opened O_CREAT|O_RDWR 0o664 and locked with flock(LOCK_EX|LOCK_NB). Once all
are held, all are closed (which releases them). Exit 0 if every lock was
taken, 75 (like withlock's skip code) if one was busy.
"""
import fcntl
import hashlib
import os
import resource
import sys
from pathlib import Path


def main():
    lockdir, listfile = sys.argv[1], sys.argv[2]
    with open(listfile, encoding="utf-8") as f:
        paths = [line.rstrip("\n") for line in f]
    paths = [p for p in paths if p]
    canon = sorted({Path(p).resolve(strict=False) for p in paths}, key=str)

    # 10,000 locks are 10,000 open descriptors: make room, as a worker would
    # have to (withlock's Go runtime raises the soft limit by itself).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(canon) + 64
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (need if hard == resource.RLIM_INFINITY else min(need, hard), hard))

    os.makedirs(lockdir, exist_ok=True)
    fds = []
    try:
        for c in canon:
            name = hashlib.sha256(str(c).encode("utf-8")).hexdigest() + ".lock"
            fd = os.open(os.path.join(lockdir, name), os.O_CREAT | os.O_RDWR, 0o664)
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print("busy: %s" % c, file=sys.stderr)
                return 75
    finally:
        for fd in fds:
            os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
