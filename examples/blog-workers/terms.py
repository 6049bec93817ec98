#!/usr/bin/env python3
"""Term extraction worker (modelled on scripts/term-extraction/term_extract_worker.py).

Takes one KO post that has no glossary line yet, asks the "model" for the
post's terms, and appends a bilingual glossary line (한영 병기) to the KO file.

The edit is a read-modify-write with the model call in between: the file is
read, the model thinks for a few simulated minutes (long posts: 16),
and the file is written back from what was read. Anything another worker
wrote to the file in between is undone - unless something keeps the other
workers off this file meanwhile. This worker does not lock anything itself.

Which post: the one in WITHLOCK_PATHS when a wrapper locked it for us,
else the first KO post without a glossary line (worklib.choose).
"""
import sys

import worklib as w

NAME = "terms"
GLOSSARY = "<!-- glossary:"
TERMS = ["군 작용 (group action)", "분류 공간 (classifying space)", "올뭉치 (fibration)",
         "호모토피 (homotopy)", "층 (sheaf)", "스펙트럼 열 (spectral sequence)"]


def needs(n):
    return GLOSSARY not in w.read(w.ko(n))


def queue():
    return [n for n in w.posts() if needs(n)]


def paths(n):
    """The files this worker edits for post n: what a wrapper must lock."""
    return [w.ko(n)]


def minutes(n):
    """Model time: every third post is a long one."""
    return 16 if n % 3 == 0 else 2


def main():
    n = w.choose(NAME, queue, needs)
    if n is None:
        return 0
    path = w.ko(n)
    t_read = w.now()
    text = w.read(path)
    w.work(minutes(n))  # the model call: the gap between read and write
    mark = w.marker(NAME)
    text = text.rstrip("\n") + f"\n\n{GLOSSARY} {TERMS[n % len(TERMS)]} [{mark}] -->\n"
    w.write(path, text)
    w.oplog(NAME, n, path, mark, t_read, w.now())
    w.log(NAME, f"post-{n}: glossary added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
