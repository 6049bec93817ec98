#!/usr/bin/env python3
"""The starvation benchmark (docs/benchmarks.md, "Fair waiting").

    python3 starve.py WORK ROUNDS WAIT NAME=WITHLOCK...

One set of 40 paths waits (--wait WAIT) while four loops run single-path
jobs (withlock -q --paths P -- sleep 0.05, back to back) on paths within
that set: loop k cycles through paths k, k+4, k+8, ... of the 40. Each
round starts the loops, lets them run 0.5 s, then starts the large set and
times it until its command has run (or it gives up: a timeout); the loops
stop when it ends. The binaries named are measured in turn in every round
(interleaved, each in a lock dir of its own). Prints, per binary, the large
set's wait (p50 and max over the rounds, and how many rounds timed out) and
the loops' throughput (jobs completed per second while the large set
waited).
"""
import os
import statistics
import subprocess
import sys
import threading
import time

HOLD = "0.05"
N = 40


def round_once(wl, work, wait):
    lockdir = os.path.join(work, "locks")
    tree = os.path.join(work, "tree")
    os.makedirs(tree, exist_ok=True)
    paths = [os.path.join(tree, f"p{i:02d}") for i in range(N)]
    lst = os.path.join(work, "set")
    with open(lst, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    env = dict(os.environ, WITHLOCK_LOCK_DIR=lockdir)
    stop = threading.Event()
    done = []  # end times of completed loop jobs

    def loop(k):
        i = k
        while not stop.is_set():
            rc = subprocess.run([wl, "-q", "--paths", paths[i % N], "--", "/bin/sleep", HOLD], env=env).returncode
            if rc == 0:
                done.append(time.monotonic())
            i += 4

    ts = [threading.Thread(target=loop, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    rc = subprocess.run([wl, "-q", "--wait", wait, "--paths-from", lst, "--", "/bin/true"], env=env).returncode
    t1 = time.monotonic()
    stop.set()
    for t in ts:
        t.join()
    jobs = sum(1 for d in done if t0 <= d <= t1)
    return t1 - t0, rc, jobs / (t1 - t0)


def main():
    work, rounds, wait = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    bins = [a.split("=", 1) for a in sys.argv[4:]]
    res = {name: [] for name, _ in bins}
    for r in range(rounds):
        for name, wl in bins:
            w, rc, tput = round_once(wl, os.path.join(work, name, str(r)), wait)
            res[name].append((w, rc, tput))
            print(f"round {r} {name}: wait {w * 1000:.0f} ms, exit {rc}, loops {tput:.1f} jobs/s", file=sys.stderr)
    print("| withlock | rounds | large set's wait p50 | max | timed out | loops' jobs/s (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in res.items():
        waits = [w for w, _, _ in rs]
        print(f"| {name} | {len(rs)} | {statistics.median(waits) * 1000:.0f} ms | {max(waits) * 1000:.0f} ms "
              f"| {sum(rc != 0 for _, rc, _ in rs)} | {statistics.median(t for _, _, t in rs):.1f} |")


if __name__ == "__main__":
    main()
