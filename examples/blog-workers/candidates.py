#!/usr/bin/env python3
"""candidates.py WORKER [--max K]

Prints the first K posts (default 8) of WORKER's queue as candidate sets
for `withlock --first-of --candidates-from -`: each post's files one per
line, an empty line between posts, in the worker's own order. The queue
stays in the worker (WORKER.queue() and WORKER.paths(), imported from the
worker's file - the worker is unchanged); withlock takes the first post
none of whose files another worker holds, all or nothing, with the slot
taken once, and tells the worker which through WITHLOCK_PATHS. An empty
queue prints nothing, and withlock then refuses to run the worker (125).
"""
import importlib
import os
import sys


def main(argv):
    if not argv or len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--max"):
        sys.exit(__doc__)
    k = int(argv[2]) if len(argv) == 3 else 8
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    mod = importlib.import_module(argv[0])
    out = "\n".join("".join(f"{p}\n" for p in mod.paths(n)) for n in mod.queue()[:k])
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader did not want the queue (a paused gate): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
