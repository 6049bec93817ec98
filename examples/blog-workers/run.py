#!/usr/bin/env python3
"""Play the blog workers' crontab in accelerated time, three ways, with real
processes and real locks, and check afterwards that every write survived.

  python3 run.py --bin DIR [--hours 12] [--minute-ms 25] [--workdir DIR]
                 [--schemes none,old,new] [--parallel] [--json FILE]

--bin holds the built withlock and cron-gate. Each scheme gets a fresh copy
of the same generated blog under WORKDIR/SCHEME and plays its crontab
(crontab.none, crontab.old, crontab.new next to this file) for --hours
simulated hours: every due line is started with /bin/sh -c, in crontab
order, as cron does. One simulated minute is --minute-ms of real time while
any job is running; when nothing runs, the clock jumps to the next tick
(nothing can happen in between, and it keeps the demo short).

Afterwards a checker reads the files: every write a worker logged (one line
per write in oplog.jsonl, with the marker it added) must still be in its
file. A missing marker is a lost write: two workers edited one file at once
and the later write was made from a copy read before the earlier one.

Exit status: 0 when (a) no locks lost at least one write, (b) and (c) lost
none, and (c) wasted fewer ticks than (b); 1 otherwise; 2 on a setup error.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import classify  # noqa: E402
import terms  # noqa: E402
import translate  # noqa: E402
import worklib  # noqa: E402

WORKERS = {"translate": translate, "terms": terms, "classify": classify}
SCHEMES = {
    "none": "(a) no locks",
    "old": "(b) whole-worker locks",
    "new": "(c) cron-gate + withlock",
}
SKIP = 75
CANDIDATES = 8  # as candidates.py's default --max
TOPICS = ["Group Actions", "Classifying Spaces", "Fibrations", "Covering Spaces",
          "Homotopy Groups", "Sheaves", "Spectral Sequences", "Vector Bundles",
          "Cohomology Rings", "Model Categories", "Loop Spaces", "K-Theory"]

# worklib.ROOT is a module global; snapshots of a scheme's queues (taken
# while other schemes may be playing in other threads) switch it under this.
_root_lock = threading.Lock()


def generate(blog, posts, translated):
    """posts KO posts; EN for the first `translated`. Nothing has a glossary
    line or classified links yet."""
    (blog / "content" / "ko").mkdir(parents=True)
    (blog / "content" / "en").mkdir(parents=True)
    for n in range(1, posts + 1):
        title = f"{TOPICS[n % len(TOPICS)]} {n}"
        links = [m for m in (n - 2, n - 1, n + 3) if 1 <= m <= posts]
        body = "".join(f"[{TOPICS[m % len(TOPICS)]} {m}](/posts/post-{m}/){{: .dep}}\n" for m in links)
        ko = (f"---\ntitle: \"{title}\"\nlang: ko\n---\n\n"
              f"{title}을(를) 정리한 글이다. 앞 글의 정의를 이어 쓴다.\n\n함께 읽을 글:\n\n{body}")
        (blog / "content" / "ko" / f"post-{n}.md").write_text(ko, encoding="utf-8")
        if n <= translated:
            en = (f"---\ntitle: \"{title}\"\nlang: en\n---\n\n"
                  f"Notes on {title}, building on the previous post.\n\nRead with:\n\n{body}")
            (blog / "content" / "en" / f"post-{n}.md").write_text(en, encoding="utf-8")


def parse_field(field, lo, hi):
    out = set()
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/")
            step = int(s)
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            a, b = map(int, part.split("-"))
        else:
            a = b = int(part)
            if step != 1:
                b = hi
        out.update(range(a, b + 1, step))
    return out


def parse_crontab(text):
    """(env, jobs): the NAME=value lines and the job lines, in order."""
    env, jobs = {}, []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not (s[0].isdigit() or s[0] == "*"):
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)", s)
            if not m:
                raise SystemExit(f"run.py cannot read crontab line: {line}")
            env[m[1]] = m[2]
            continue
        f = s.split(None, 5)
        if f[2:5] != ["*", "*", "*"]:
            raise SystemExit(f"run.py plays minute and hour fields only: {line}")
        w = re.search(r"(translate|terms|classify)\.py\s*$", f[5])
        if not w:
            raise SystemExit(f"no worker in crontab line: {line}")
        jobs.append({"minutes": parse_field(f[0], 0, 59), "hours": parse_field(f[1], 0, 23),
                     "cmd": f[5], "worker": w[1],
                     # a line that is expected never to run (paused gate)
                     "extra": "classifier-backlog" in f[5]})
    return env, jobs


def queues(blog):
    """Each worker's queue now (post numbers, in the worker's order)."""
    with _root_lock:
        old, worklib.ROOT = worklib.ROOT, blog
        try:
            return {name: mod.queue() for name, mod in WORKERS.items()}
        finally:
            worklib.ROOT = old


def candidates(blog, worker):
    """The files of the first CANDIDATES posts of a worker's queue, as
    withlock --first-of tries them (candidates.py), relative to blog."""
    with _root_lock:
        old, worklib.ROOT = worklib.ROOT, blog
        try:
            mod = WORKERS[worker]
            return [[str(p.relative_to(blog)) for p in mod.paths(n)] for n in mod.queue()[:CANDIDATES]]
        finally:
            worklib.ROOT = old


class Scheme:
    def __init__(self, key, work, args, bindir):
        self.key, self.title = key, SCHEMES[key]
        self.dir = work / key
        self.blog = self.dir / "blog"
        self.args, self.scale, self.bindir = args, args.minute_ms / 1000.0, bindir
        if self.dir.exists():
            shutil.rmtree(self.dir)
        for d in ("locks", "tmp", "state"):
            (self.dir / d).mkdir(parents=True)
        generate(self.blog, args.posts, args.translated)
        subst = {"@DEMO@": str(self.dir), "@WORKERS@": str(HERE), "@BIN@": str(bindir),
                 "@PYDIR@": os.path.dirname(sys.executable), "@MINUTE@": repr(self.scale)}

        def render(name):
            t = (HERE / name).read_text()
            for k, v in subst.items():
                t = t.replace(k, v)
            return t
        self.crontab = render(f"crontab.{key}")
        (self.dir / "crontab").write_text(self.crontab)
        (self.dir / "cron-gate.toml").write_text(render("cron-gate.toml"))
        self.env, self.jobs = parse_crontab(self.crontab)
        self.start_queues = queues(self.blog)
        self.start_en = len(list((self.blog / "content" / "en").iterdir()))

    def play(self):
        # cron's environment: HOME, LOGNAME, SHELL and PATH, then the
        # crontab's own NAME=value lines - not the caller's environment.
        # PYTHONPYCACHEPREFIX keeps __pycache__ out of the source tree.
        env = {"HOME": os.environ.get("HOME", "/"), "LOGNAME": os.environ.get("LOGNAME", "root"),
               "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
               "PYTHONPYCACHEPREFIX": str(self.dir.parent / "pycache"),
               # cron-gate's config cache in the run's dir, not root's
               # /var/cache/cron-gate: the demo leaves the machine as it was.
               "CRON_GATE_CACHE_DIR": str(self.dir / "cache")}
        env.update(self.env)
        # Warm up (page cache, byte code) so that tick 0 starts like any other.
        subprocess.run(["/bin/sh", "-c", f"cd {shlex.quote(str(HERE))} && python3 -c 'import candidates, translate, terms, classify'"
                        " && withlock --version && cron-gate --version"],
                       env=env, stdout=subprocess.DEVNULL, check=True)
        log = open(self.dir / "cron.log", "ab")
        live, self.ticks, self.anchors = [], [], []
        t0, offset = time.monotonic(), 0.0
        started = time.monotonic()

        def reap():
            for tick in list(live):
                rc = tick["proc"].poll()
                if rc is not None:
                    tick["rc"], tick["end"] = rc, time.monotonic()
                    del tick["proc"]
                    live.remove(tick)

        for t in range(self.args.hours * 60):
            due = [j for j in self.jobs if t % 60 in j["minutes"] and (t // 60) % 24 in j["hours"]]
            if not due:
                continue
            target = t0 + t * self.scale - offset
            while True:
                reap()
                now = time.monotonic()
                if now >= target:
                    break
                if not live:  # idle: jump the clock to this tick
                    offset += target - now
                    break
                time.sleep(min(0.002, target - now))
            wall = time.monotonic()
            self.anchors.append((wall, t))
            for j in due:
                proc = subprocess.Popen(["/bin/sh", "-c", j["cmd"]], env=env, stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=log, cwd=self.dir)
                tick = {"t": t, "worker": j["worker"], "extra": j["extra"], "wall": time.monotonic(), "proc": proc}
                live.append(tick)
                self.ticks.append(tick)
            for tick in self.ticks[-len(due):]:
                if not tick["extra"]:
                    tick["cands"] = candidates(self.blog, tick["worker"])
        while live:
            reap()
            time.sleep(0.002)
        log.close()
        self.seconds = time.monotonic() - started
        return self

    def sim(self, wall):
        """Simulated minute of a monotonic time (anchored at the last tick)."""
        best = self.anchors[0]
        for a in self.anchors:
            if a[0] <= wall:
                best = a
        return best[1] + (wall - best[0]) / self.scale

    def check(self):
        ops = []
        oplog = self.blog / "oplog.jsonl"
        if oplog.exists():
            ops = [json.loads(line) for line in oplog.read_text().splitlines()]
        texts = {}
        for op in ops:
            if op["file"] not in texts:
                texts[op["file"]] = worklib.read(self.blog / op["file"])
        lost = [op for op in ops if op["marker"] not in texts[op["file"]]]
        for op in lost:
            # who wrote the same file while this write's read-modify-write was open
            op["by"] = sorted({o["worker"] for o in ops if o is not op and o["file"] == op["file"]
                               and o["read"] < op["write"] and op["read"] < o["write"]})

        def editing(path, wall):
            return any(o["file"] == path and o["read"] <= wall <= o["write"] for o in ops)

        rows = [t for t in self.ticks if not t["extra"]]
        skipped = [t for t in rows if t["rc"] == SKIP]
        wasted = [t for t in skipped if any(not any(editing(p, t["wall"]) for p in c) for c in t["cands"])]
        for t in skipped:  # which other jobs were running then
            t["while"] = sorted({o["worker"] for o in rows if o is not t and o["wall"] <= t["wall"] <= o["end"]}) or ["?"]
        errors = [t for t in self.ticks if t["rc"] not in (0, SKIP)]
        extra = [t for t in self.ticks if t["extra"]]
        # Posts withlock --first-of passed over because another worker held
        # one of their files: the worker's note when it got a later one,
        # withlock's count when every candidate was busy.
        # Stale: the worker's queue was printed while an earlier run was
        # finishing the post at its head; by the time withlock took it, it
        # was done, and the worker (re-checking under the lock) did nothing.
        passed = stale = 0
        for line in (self.dir / "cron.log").read_text(errors="replace").splitlines():
            m = re.search(r": the first (\d+) candidate\(s\) were busy$", line) or re.search(r"^withlock: skipped .*: (\d+) sets? busy", line)
            if m:
                passed += int(m[1])
            if re.search(r": post-\d+ no longer needs \w+; nothing to do$", line):
                stale += 1
        end = queues(self.blog)
        per = {}
        for w in WORKERS:
            mine = [t for t in rows if t["worker"] == w]
            per[w] = {"ticks": len(mine), "ran": sum(t["rc"] == 0 for t in mine),
                      "skipped": sum(t["rc"] == SKIP for t in mine),
                      "wasted": sum(t in wasted for t in mine), "backlog": len(end[w]), "skipped_while": {}}
            for t in mine:
                if t["rc"] == SKIP:
                    k = "+".join(t["while"])
                    per[w]["skipped_while"][k] = per[w]["skipped_while"].get(k, 0) + 1
        en_now = len(list((self.blog / "content" / "en").iterdir()))
        self.result = {
            "scheme": self.key, "title": self.title,
            "ticks": len(rows), "ran": sum(t["rc"] == 0 for t in rows), "skipped": len(skipped),
            "wasted": len(wasted), "errors": len(errors),
            "translated": en_now - self.start_en,
            "glossary": len(self.start_queues["terms"]) - len(end["terms"]),
            "classified": en_now - len(end["classify"]),
            "backlog": sum(len(q) for q in end.values()),
            "writes": len(ops), "lost_writes": len(lost),
            "lost": [{"file": o["file"], "worker": o["worker"], "by": o["by"],
                      "minute": round(self.sim(o["write"]))} for o in lost],
            "per_worker": per,
            "passed_over": passed,
            "stale": stale,
            "paused_ticks": len(extra), "paused_skipped": sum(t["rc"] == SKIP for t in extra),
            "error_ticks": [{"worker": t["worker"], "minute": t["t"], "rc": t["rc"]} for t in errors],
            "seconds": round(self.seconds, 1),
            "status": subprocess.run([str(self.bindir / "cron-gate"), "--config", str(self.dir / "cron-gate.toml"),
                                      "status"], capture_output=True, text=True).stdout if self.key == "new" else "",
        }
        return self.result


def hhmm(m):
    return f"{m // 60:02d}:{m % 60:02d}"


def table(results, args):
    cols = [("scheme", 26, "title"), ("ticks", 5, "ticks"), ("ran", 4, "ran"), ("skipped", 7, "skipped"),
            ("wasted", 6, "wasted"), ("translated", 10, "translated"), ("glossary", 8, "glossary"),
            ("classified", 10, "classified"), ("backlog", 7, "backlog"), ("lost writes", 11, "lost_writes")]
    out = ["  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w, _) in enumerate(cols))]
    for r in results:
        out.append("  ".join(f"{r[k]:<{w}}" if i == 0 else f"{r[k]:>{w}}" for i, (_, w, k) in enumerate(cols)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="directory with the built withlock and cron-gate")
    ap.add_argument("--hours", type=int, default=12, help="simulated hours (default 12)")
    ap.add_argument("--minute-ms", type=float, default=25, help="real ms per simulated minute while jobs run (default 25)")
    ap.add_argument("--posts", type=int, default=200)
    ap.add_argument("--translated", type=int, default=80, help="posts that already have EN (default 80)")
    ap.add_argument("--workdir", help="where the runs go (default: a new temp dir, removed unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--schemes", default="none,old,new")
    ap.add_argument("--parallel", action="store_true", help="play the schemes at the same time")
    ap.add_argument("--json", help="write the results as JSON to this file")
    args = ap.parse_args()

    bindir = Path(args.bin).resolve()
    for b in ("withlock", "cron-gate"):
        if not os.access(bindir / b, os.X_OK):
            print(f"run.py: {bindir / b} is missing; build with: CGO_ENABLED=0 go build -o DIR/ ./cmd/...", file=sys.stderr)
            return 2
    keys = args.schemes.split(",")
    if "old" in keys and not shutil.which("flock"):
        print("run.py: flock(1) is missing (Debian: apt-get install util-linux)", file=sys.stderr)
        return 2
    work = Path(args.workdir).resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="blog-workers-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        schemes = [Scheme(k, work, args, bindir) for k in keys]
        t = schemes[0]
        print(f"{args.hours} simulated hours, 1 minute = {args.minute_ms:g} ms while a job runs; "
              f"{args.posts} KO posts, {args.translated} with EN; work dir {work}", flush=True)
        if args.parallel:
            with ThreadPoolExecutor(len(schemes)) as ex:
                list(ex.map(Scheme.play, schemes))
        else:
            for s in schemes:
                s.play()
                print(f"  {s.title}: played in {s.seconds:.1f} s", flush=True)
        results = [s.check() for s in schemes]
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(table(results, args))
    print()
    print("ticks: crontab ticks of the three workers (translate/terms/classify: "
          + "/".join(str(t["per_worker"][w]["ticks"]) for t in results[:1] for w in WORKERS) + ")")
    print("wasted: skipped although the worker's queue held a post none of whose files was being edited")
    print("backlog: posts still waiting in the three queues; lost writes: logged writes missing from the files at the end")
    for r in results:
        notes = []
        if r["lost"]:
            by = {}
            for o in r["lost"]:
                k = f"{o['worker']}'s edit undone by {'+'.join(o['by']) or '?'}"
                by.setdefault(k, []).append(f"{o['file'].removeprefix('content/')} {hhmm(o['minute'])}")
            notes += [f"{k}: {', '.join(v[:3])}{' ...' if len(v) > 3 else ''}" for k, v in by.items()]
        for w, p in r["per_worker"].items():
            if p["skipped"]:
                why = ", ".join(f"{n} while {k} ran" for k, n in sorted(p["skipped_while"].items()))
                notes.append(f"{w} skipped {p['skipped']} of {p['ticks']} ticks ({why}), {p['wasted']} wasted")
        if r["passed_over"]:
            notes.append(f"withlock --first-of passed over a busy post {r['passed_over']} time(s)")
        if r.get("stale"):
            notes.append(f"{r['stale']} run(s) got a post that an earlier run finished after the queue was printed: "
                         "the worker re-checked it under the lock and did nothing")
        if r["paused_ticks"]:
            notes.append(f"classifier-backlog (paused in the config): {r['paused_ticks']} ticks, "
                         f"{r['paused_skipped']} skipped by cron-gate")
        notes += [f"ERROR: {e['worker']} tick {hhmm(e['minute'])} exited {e['rc']}" for e in r["error_ticks"]]
        if notes:
            print(f"{r['title']}:")
            for n in notes:
                print(f"    {n}")
    if "new" in [r["scheme"] for r in results]:
        print()
        print("cron-gate status after (c):")
        print(next(r for r in results if r["scheme"] == "new")["status"].rstrip())

    by = {r["scheme"]: r for r in results}
    checks = []
    if "none" in by:
        checks.append((by["none"]["lost_writes"] > 0, "no locks loses writes (the checker can fail)"))
    for k in ("old", "new"):
        if k in by:
            checks.append((by[k]["lost_writes"] == 0, f"{SCHEMES[k]} loses no write"))
    if "old" in by and "new" in by:
        checks.append((by["new"]["wasted"] < by["old"]["wasted"], "cron-gate + withlock wastes fewer ticks than whole-worker locks"))
    for r in results:
        checks.append((r["errors"] == 0, f"{r['title']}: no job failed"))
    print()
    for ok, what in checks:
        print(("ok      " if ok else "FAILED  ") + what)
    if args.json:
        Path(args.json).write_text(json.dumps({"hours": args.hours, "minute_ms": args.minute_ms,
                                               "results": results,
                                               "checks": [{"ok": ok, "what": w} for ok, w in checks]}, indent=1))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
