"""The user's lock rule, as seed 000 (scripts/lib/blog_file_lock.py) shows it.

This is the Python side of the interop and stress tests: it must stay the
seed's code, not an emulation of withlock. Only the slot pool is
parameterised (the seed hard-codes four /tmp/dependency-classifier-slot-N.lock
files).
"""
import fcntl
import hashlib
import os
from pathlib import Path

LOCK_DIR = Path("/tmp/blog-file-locks")


class FileLockSet:
    def __init__(self, fds, paths):
        self.fds = fds
        self.paths = paths

    def release(self):
        while self.fds:
            os.close(self.fds.pop())


def _canonical(paths):
    # All callers acquire in the same order, so a future blocking caller cannot
    # introduce an AB/BA deadlock.  resolve(strict=False) also gives prospective
    # translation output paths a stable identity before the EN file exists.
    return tuple(sorted({Path(p).resolve(strict=False) for p in paths}, key=str))


def lock_name(path):
    return hashlib.sha256(str(path).encode("utf-8")).hexdigest() + ".lock"


def try_acquire_file_locks(paths, *, lock_dir=LOCK_DIR):
    lock_dir = Path(lock_dir)
    canonical = _canonical(paths)
    fds = []
    try:
        for path in canonical:
            name = lock_name(path)
            fd = os.open(lock_dir / name, os.O_CREAT | os.O_RDWR, 0o664)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return FileLockSet(fds=fds, paths=canonical)
    except OSError:
        while fds:
            os.close(fds.pop())
        return None


def slot_paths(template, n):
    return tuple(Path(template.replace("{i}", str(i))) for i in range(n))


def acquire_slot(slot_paths):
    """First free slot wins, as the classifier's acquire_slot does."""
    for i, path in enumerate(slot_paths):
        lock_fh = open(path, "w")
        try:
            fcntl.flock(lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return i, lock_fh
        except OSError:
            lock_fh.close()
    return None, None
