#!/usr/bin/env python3
"""Interleaved timing: python3 interleave.py N CMD... runs each command once per
round for N rounds (posix_spawn + waitpid, no shell) and prints the median
and 10th percentile of each, and both as a ratio to the first command.
Interleaving makes the ratios robust to load that drifts during the run."""
import subprocess, time, sys, statistics, os
cmds = [c.split() for c in sys.argv[2:]]
n = int(sys.argv[1])
res = [[] for _ in cmds]
for i in range(n):
    for j, c in enumerate(cmds):
        t = time.perf_counter_ns()
        pid = os.posix_spawn(c[0], c, os.environ)
        os.waitpid(pid, 0)
        res[j].append((time.perf_counter_ns() - t) / 1e6)
base = statistics.median(res[0])
for c, r in zip(sys.argv[2:], res):
    r.sort()
    med = statistics.median(r); p10 = r[len(r)//10]
    print(f"{med:6.3f} med {p10:6.3f} p10  x{med/base:4.2f} x{p10/(sorted(res[0])[len(r)//10]):4.2f}(p10)  {c}")
