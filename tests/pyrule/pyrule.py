#!/usr/bin/env python3
"""Reference lock-name rule of the Python 3.11 workers, for pathlock's tests.

Input (stdin): one JSON object
    {"paths": ["p1", "p2", ...], "sets": [["p1", ...], ...]}
("sets" is optional). Output (stdout): one JSON object per line:
  * for every entry of "paths", in order:
        {"path": p, "canonical": str(resolved), "lockname": "<sha256>.lock"}
    or  {"path": p, "error": "loop"}   for RuntimeError (symlink loop)
    or  {"path": p, "error": "value"}  for ValueError (e.g. NUL byte)
    or  {"path": p, "error": "<ExceptionClass>"} for anything else;
  * then for every entry of "sets", in order:
        {"set": i, "canonical": [...], "locknames": [...]}
    or  {"set": i, "error": "..."} as above.

Nothing is emulated: the rule below is the one the workers use, run with the
process's own working directory (the caller sets it).
"""
import hashlib
import json
import sys
from pathlib import Path


def _canonical(paths):
    return tuple(sorted({Path(p).resolve(strict=False) for p in paths}, key=str))


def lockname(path):
    return hashlib.sha256(str(path).encode("utf-8")).hexdigest() + ".lock"


def classify(exc):
    if isinstance(exc, RuntimeError):
        return "loop"
    if isinstance(exc, ValueError):
        return "value"
    return type(exc).__name__


def main():
    if sys.version_info[:2] != (3, 11):
        print(json.dumps({"warning": "python %d.%d, rule is defined for 3.11" % sys.version_info[:2]}),
              file=sys.stderr)
    doc = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    out = sys.stdout
    for p in doc["paths"]:
        try:
            (path,) = _canonical([p])
            rec = {"path": p, "canonical": str(path), "lockname": lockname(path)}
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            rec = {"path": p, "error": classify(exc)}
        out.write(json.dumps(rec) + "\n")
    for i, paths in enumerate(doc.get("sets", [])):
        try:
            canon = _canonical(paths)
            rec = {"set": i, "canonical": [str(c) for c in canon],
                   "locknames": [lockname(c) for c in canon]}
        except Exception as exc:  # noqa: BLE001
            rec = {"set": i, "error": classify(exc)}
        out.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
