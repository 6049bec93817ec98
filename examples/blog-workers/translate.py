#!/usr/bin/env python3
"""Translation worker (modelled on scripts/translation/translate_worker.py).

Takes the first KO post that has no EN file yet and translates it, in two
steps as the original Python worker does: a draft (a few simulated minutes), written
to the EN file as soon as it exists, then polishing (the rest of ~20
simulated minutes) - a read-modify-write of the EN file with the model call
in between. A classifier that edits the fresh EN file while it is being
polished loses its edit, or makes the polish lose it, unless something
keeps the two apart. This worker locks nothing itself.

Which post: the one in WITHLOCK_PATHS when a wrapper locked it for us,
else the first KO post without an EN file.
"""
import re
import sys

import worklib as w

NAME = "translate"
DRAFT_MIN, POLISH_MIN = 3, 17


def needs(n):
    return not w.en(n).exists()


def queue():
    return [n for n in w.posts() if needs(n)]


def paths(n):
    """KO and EN as a pair, as the original Python worker locks them."""
    return [w.ko(n), w.en(n)]


def translate(ko_text):
    """The "model": front matter and links kept, prose marked as English."""
    out = []
    for line in ko_text.splitlines():
        if line.startswith("<!-- glossary:"):
            continue  # KO-only annotation
        if line.startswith("lang: "):
            line = "lang: en"
        elif line and not line.startswith(("---", "title:", "[")):
            line = "(en) " + line
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    n = w.choose(NAME, queue, needs)
    if n is None:
        return 0
    src, dst = w.ko(n), w.en(n)

    t_read = w.now()
    ko_text = w.read(src)
    w.work(DRAFT_MIN)
    mark = w.marker(NAME)
    w.write(dst, translate(ko_text) + f"<!-- translation draft [{mark}] -->\n")
    w.oplog(NAME, n, dst, mark, t_read, w.now())

    t_read = w.now()
    text = w.read(dst)
    w.work(POLISH_MIN)
    mark = w.marker(NAME)
    text = re.sub(r"^\(en\) ", "", text, flags=re.M)  # polished prose
    w.write(dst, text + f"<!-- translation polished [{mark}] -->\n")
    w.oplog(NAME, n, dst, mark, t_read, w.now())
    w.log(NAME, f"post-{n}: translated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
