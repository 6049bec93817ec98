#!/usr/bin/env python3
"""Dependency classifier (modelled on scripts/dependency-classifier/dependency_classifier.py).

Takes one KO/EN pair whose links are not classified yet, asks the "model"
how each linked post relates to this one, and writes the answer into the
links' attribute lists (kramdown IAL) in both files:

    [Group Actions](/posts/post-7/){: .dep}
 -> [Group Actions](/posts/post-7/){: .dep data-relation="prerequisite" data-run="classify-..."}

Read-modify-write of both files with the model call in between; this
worker locks nothing itself.

Which pair: the one in WITHLOCK_PATHS when a wrapper locked it for us,
else the head of its own queue - fresh translations first (their links
have never been looked at), then the other pairs in post order.
"""
import sys

import worklib as w

NAME = "classify"
PLAIN = "{: .dep}"
RELATION = "data-relation="
FRESH = "<!-- translation draft"  # left in EN files by translate.py
KINDS = ["prerequisite", "related", "follow-up"]


def needs(n):
    e = w.read(w.en(n))
    return bool(e) and (PLAIN in e or PLAIN in w.read(w.ko(n)))


def queue():
    todo = [n for n in w.posts() if needs(n)]
    fresh = [n for n in todo if FRESH in w.read(w.en(n))]
    return fresh + [n for n in todo if n not in fresh]


def paths(n):
    return [w.ko(n), w.en(n)]


def main():
    n = w.choose(NAME, queue, needs)
    if n is None:
        return 0
    t_read = w.now()
    texts = {p: w.read(p) for p in paths(n)}
    w.work(5)  # the model call
    for p, text in texts.items():
        if PLAIN not in text:
            continue  # this file is done already
        mark = w.marker(NAME)
        attrs = f'{{: .dep {RELATION}"{KINDS[n % len(KINDS)]}" data-run="{mark}"}}'
        w.write(p, text.replace(PLAIN, attrs))
        w.oplog(NAME, n, p, mark, t_read, w.now())
    w.log(NAME, f"post-{n}: links classified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
