#!/usr/bin/env python3
"""pickloop.py CANDIDATES -- COMMAND...: the example blog's former pick.py
loop, for the --first-of cost benchmark (firstof.py): for each candidate set
of CANDIDATES (sets separated by an empty line), in order, run COMMAND with
the set's paths on its stdin; the first run that does not exit 75 ends the
loop with its status; 75 if every set is busy."""
import subprocess
import sys

SKIP = 75


def main(argv):
    sep = argv.index("--")
    with open(argv[0]) as f:
        sets = [s for s in f.read().split("\n\n") if s.strip()]
    for s in sets:
        rc = subprocess.run(argv[sep + 1:], input=(s.rstrip("\n") + "\n").encode()).returncode
        if rc < 0:
            rc = 128 - rc
        if rc != SKIP:
            return rc
    return SKIP


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
