"""Python side of the stress test: loops on the seed's rule until a deadline.

Usage: stress_worker.py MARKDIR LOCKDIR SECONDS SLOT_TEMPLATE SLOTS POOLNAME PATH...

Each round takes a slot (first free wins), then a random set of 1-3 paths
all or nothing, and marks its critical section exactly as tests/csworker
does (O_CREAT|O_EXCL marker files keyed like csworker's: a post by the
device and inode of the file it stats, never by the lock's own idea of the
path), so one checker sees Go and Python holders alike.
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blog_file_lock as bfl  # noqa: E402


def violation(mark, msg):
    with open(os.path.join(mark, "VIOLATIONS"), "a") as f:
        f.write("python pid %d: %s\n" % (os.getpid(), msg))


def main():
    mark, lock_dir, seconds, template, nslots, pool = sys.argv[1:7]
    paths = sys.argv[7:]
    slots = bfl.slot_paths(template, int(nslots))
    deadline = time.monotonic() + float(seconds)
    done = 0
    while time.monotonic() < deadline:
        idx, slot_fh = bfl.acquire_slot(slots)
        if slot_fh is None:
            time.sleep(0.0005)
            continue
        try:
            chosen = random.sample(paths, random.randint(1, 3))
            locks = bfl.try_acquire_file_locks(chosen, lock_dir=lock_dir)
            if locks is None:
                continue
            try:
                names = sorted({"post-%d-%d" % (st.st_dev, st.st_ino) for st in map(os.stat, chosen)})
                names.append("pool-%s-%d" % (pool, idx))
                made = []
                for n in names:
                    try:
                        os.close(os.open(os.path.join(mark, n), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                        made.append(n)
                    except FileExistsError:
                        violation(mark, "overlap on " + n)
                time.sleep(random.random() / 1000)
                for n in made:
                    os.unlink(os.path.join(mark, n))
                done += 1
            finally:
                locks.release()
        finally:
            slot_fh.close()
    with open(os.path.join(mark, "COUNT"), "a") as f:
        f.write("p" * done)


if __name__ == "__main__":
    main()
