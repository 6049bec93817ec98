"""What the three demo workers share: where the blog is, simulated time,
careful file writes, the operation log, and how a worker learns its post.

Plain python3, stdlib only. Nothing here locks anything: in this demo the
locking scheme lives in the crontab lines, never in the workers.

Environment (set by the crontab):
  BLOG_ROOT     the blog checkout; posts are content/ko/post-N.md and
                content/en/post-N.md under it (default /srv/blog)
  DEMO_MINUTE   real seconds per simulated minute (default 60: real time)
  BLOG_OPLOG    the operation log (default BLOG_ROOT/oplog.jsonl)
"""
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("BLOG_ROOT", "/srv/blog"))
MINUTE = float(os.environ.get("DEMO_MINUTE", "60"))
OPLOG = os.environ.get("BLOG_OPLOG")


def ko(n):
    return ROOT / "content" / "ko" / f"post-{n}.md"


def en(n):
    return ROOT / "content" / "en" / f"post-{n}.md"


def posts():
    """Every post number, in order: the KO file is the post."""
    found = []
    for p in (ROOT / "content" / "ko").iterdir():
        m = re.fullmatch(r"post-(\d+)\.md", p.name)
        if m:
            found.append(int(m[1]))
    return sorted(found)


def read(path):
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def write(path, text):
    """Replace path atomically (temp file + rename), as a careful worker
    does: a reader never sees half a file. A write can still undo another
    worker's write if both read the same old version - that is the lost
    update the file locks exist for."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def work(minutes):
    """Stand-in for a model call: takes simulated minutes."""
    time.sleep(minutes * MINUTE)


def now():
    return time.monotonic()  # CLOCK_MONOTONIC: comparable across processes


_seq = 0


def marker(worker):
    """A string no other write ever adds: proof that this write survived."""
    global _seq
    _seq += 1
    return f"{worker}-{os.getpid()}-{time.time_ns() // 1000}-{_seq}"


def oplog(worker, n, path, mark, t_read, t_write):
    """One line per write, with the marker it added, so a checker can tell
    whether every write is still in the file at the end. One write(2) on an
    O_APPEND descriptor, so concurrent workers never interleave lines."""
    line = json.dumps({"worker": worker, "post": n, "file": str(path.relative_to(ROOT)),
                       "marker": mark, "read": t_read, "write": t_write, "pid": os.getpid()})
    fd = os.open(OPLOG or ROOT / "oplog.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def log(worker, msg):
    print(f"{worker}[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


def held_post():
    """The post whose files a wrapper locked for this process, or None.

    withlock exports the canonical paths it holds as WITHLOCK_PATHS, a JSON
    array (lists over 64 KiB come through WITHLOCK_PATHS_FD instead; one or
    two paths never do). The KO path names the post."""
    raw = os.environ.get("WITHLOCK_PATHS")
    if not raw:
        return None
    for p in json.loads(raw):
        m = re.search(r"/ko/post-(\d+)\.md$", p)
        if m:
            return int(m[1])
    sys.exit(f"WITHLOCK_PATHS names no KO post: {raw}")


def choose(worker, queue, needs):
    """The post to work on: the one the wrapper locked for us (re-checked,
    now that nobody else can touch it), else the head of our own queue.
    None when there is nothing to do."""
    n = held_post()
    skipped = int(os.environ.get("WITHLOCK_CANDIDATE") or 0)
    if n is not None and skipped > 0:
        # withlock --first-of passed over the posts before this one in our
        # queue: another worker held one of their files.
        log(worker, f"post-{n}: the first {skipped} candidate(s) were busy")
    if n is not None:
        if not needs(n):
            log(worker, f"post-{n} no longer needs {worker}; nothing to do")
            return None
        return n
    todo = queue()
    if not todo:
        log(worker, "queue empty")
        return None
    return todo[0]
