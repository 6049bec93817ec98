#!/usr/bin/env python3
"""The starvation benchmark (docs/benchmarks.md, "Fair waiting").

    python3 starve.py [--backend etcd] WORK ROUNDS WAIT NAME=WITHLOCK...

One set of 40 paths waits (--wait WAIT) while four loops run single-path
jobs (withlock -q --paths P -- sleep 0.05, back to back) on paths within
that set: loop k cycles through paths k, k+4, k+8, ... of the 40. Each
round starts the loops, lets them run 0.5 s, then starts the large set and
times it until its command has run (or it gives up: a timeout); the loops
stop when it ends. The binaries named are measured in turn in every round
(interleaved, each in a lock dir of its own). Prints, per binary, the large
set's wait (p50 and max over the rounds, and how many rounds timed out) and
the loops' throughput (jobs completed per second while the large set
waited, and over the whole round: from the loops' start until the large
set's command has run).

With --backend etcd every withlock runs with --backend etcd and a key
prefix of its round's own (/starve/NAME/ROUND); the cluster's endpoints
come from WITHLOCK_ETCD_ENDPOINTS.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

HOLD = "0.05"
N = 40


BACKEND = []


def round_once(wl, work, wait, prefix):
    lockdir = os.path.join(work, "locks")
    tree = os.path.join(work, "tree")
    os.makedirs(tree, exist_ok=True)
    paths = [os.path.join(tree, f"p{i:02d}") for i in range(N)]
    lst = os.path.join(work, "set")
    with open(lst, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    env = dict(os.environ, WITHLOCK_LOCK_DIR=lockdir)
    be = BACKEND + (["--key-prefix", prefix] if BACKEND else [])
    stop = threading.Event()
    done = []  # end times of completed loop jobs

    def loop(k):
        i = k
        while not stop.is_set():
            rc = subprocess.run([wl, "-q", *be, "--paths", paths[i % N], "--", "/bin/sleep", HOLD], env=env).returncode
            if rc == 0:
                done.append(time.monotonic())
            i += 4

    ts = [threading.Thread(target=loop, args=(k,)) for k in range(4)]
    tl = time.monotonic()
    for t in ts:
        t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    rc = subprocess.run([wl, "-q", *be, "--wait", wait, "--paths-from", lst, "--", "/bin/true"], env=env).returncode
    t1 = time.monotonic()
    stop.set()
    for t in ts:
        t.join()
    jobs = sum(1 for d in done if t0 <= d <= t1)
    return t1 - t0, rc, jobs / (t1 - t0), len(done) / (t1 - tl)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--backend"]:
        if args[1] != "local":
            BACKEND.extend(["--backend", args[1]])
        args = args[2:]
    work, rounds, wait = args[0], int(args[1]), args[2]
    bins = [a.split("=", 1) for a in args[3:]]
    res = {name: [] for name, _ in bins}
    for r in range(rounds):
        for name, wl in bins:
            w, rc, tput, whole = round_once(wl, os.path.join(work, name, str(r)), wait, f"/starve/{name}/{r}")
            res[name].append((w, rc, tput, whole))
            print(f"round {r} {name}: wait {w * 1000:.0f} ms, exit {rc}, loops {tput:.1f} jobs/s while it waited, "
                  f"{whole:.1f} over the round", file=sys.stderr)
    print("| withlock | rounds | large set's wait p50 | max | timed out | loops' jobs/s while it waits (median) | over the round |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rs in res.items():
        waits = [r[0] for r in rs]
        print(f"| {name} | {len(rs)} | {statistics.median(waits) * 1000:.0f} ms | {max(waits) * 1000:.0f} ms "
              f"| {sum(r[1] != 0 for r in rs)} | {statistics.median(r[2] for r in rs):.1f} | {statistics.median(r[3] for r in rs):.1f} |")


if __name__ == "__main__":
    main()
