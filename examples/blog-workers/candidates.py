#!/usr/bin/env python3
"""pick.py WORKER [--max K] -- COMMAND [ARG...]

The queue step in front of withlock. withlock must know which files to lock
before the worker starts, so somebody has to choose the post first; the
worker's own queue knows best, so this asks it (WORKER.queue() and
WORKER.paths(), imported from the worker's file - the worker is unchanged).

For each of the first K posts of the queue (default 8), in order, pick.py
runs COMMAND with that post's paths on its stdin, one per line - meant for
`withlock --paths-from - ...`. The first run that does not exit with the
skip code 75 (busy) ends it, with that run's status. If every candidate is
busy, or the queue is empty, it exits 75 and cron-gate records the tick as
skipped (busy).

This is the original Python classifier's "take the first pair you can lock" rule,
moved out of the worker: a post another worker holds is passed over, not
waited for. Nothing is held between attempts, and each attempt is
withlock's own all-or-nothing try, so there is no check-then-lock race.
"""
import importlib
import os
import subprocess
import sys

SKIP = 75


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    sep = argv.index("--")
    opts, command = argv[:sep], argv[sep + 1:]
    if not opts or not command:
        sys.exit(__doc__)
    worker, k = opts[0], 8
    if len(opts) == 3 and opts[1] == "--max":
        k = int(opts[2])
    elif len(opts) != 1:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    mod = importlib.import_module(worker)

    todo = mod.queue()[:k]
    if not todo:
        print(f"pick {worker}: queue empty", file=sys.stderr)
        return 0
    for n in todo:
        lines = "".join(f"{p}\n" for p in mod.paths(n))
        rc = subprocess.run(command, input=lines.encode()).returncode
        if rc < 0:
            rc = 128 - rc  # died of a signal: report it as a shell would
        if rc != SKIP:
            return rc
    print(f"pick {worker}: all {len(todo)} candidates busy; skipping this tick", file=sys.stderr)
    return SKIP


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
