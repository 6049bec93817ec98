#!/usr/bin/env python3
"""Helpers for tests/bench/run.sh (python 3.11, standard library only).

Subcommands:
  mktree ROOT N LIST         N paths under ROOT (half existing files, half
                             not), one per line into LIST
  lockpath LOCKDIR PATH      the lock file of PATH by the Python rule
  isdynamic BINARY           exit 0 if the ELF file has an interpreter
  samenames DIR_A DIR_B N    both lock dirs hold the same N *.lock names
  hold LOCKFILE              (internal) the "exit" handoff holder
  busy [SECONDS]             CPU busy % over SECONDS (what else is running)
  handoff --withlock B --stamp B --lock-dir D --target P --out JSON [-n N]
          [--handoffwait B --bare floor|park ...]
                             measure --wait handoff latency vs flock -w
                             (and bare Go waiters, tests/bench/handoffwait)
  handoffratio JSON          a handoff run's table, p50 against flock -w's
  report --percall J... --tenk J --tenk-first J --handoff J
                             print the markdown tables
"""
import argparse
import fcntl
import glob
import hashlib
import json
import math
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path


sys.dont_write_bytecode = True  # leave no __pycache__ in the repo
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyrule"))
import blog_file_lock  # noqa: E402  the seed's lock rule


def lockname(path):
    """The Python workers' rule: the seed's own functions."""
    (canon,) = blog_file_lock._canonical([path])
    return blog_file_lock.lock_name(canon)


def lockpath(lockdir, path):
    return os.path.join(lockdir, lockname(path))


# --------------------------------------------------------------- small tools

def cmd_mktree(a):
    root = Path(a.root)
    ndirs = 100
    for d in range(ndirs):
        (root / ("d%02d" % d)).mkdir(parents=True, exist_ok=True)
    with open(a.list, "w", encoding="utf-8") as out:
        for i in range(a.n):
            p = root / ("d%02d" % (i % ndirs)) / ("f%05d" % i)
            if i % 2 == 0:
                p.touch()  # half the paths exist, half do not (yet)
            out.write(str(p) + "\n")


def cmd_lockpath(a):
    print(lockpath(a.lockdir, a.path))


def cmd_isdynamic(a):
    """PT_INTERP present = dynamically linked (64-bit little-endian ELF)."""
    with open(a.binary, "rb") as f:
        data = f.read(1 << 16)
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit(2)
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        ptype, = struct.unpack_from("<I", data, phoff + i * phentsize)
        if ptype == 3:  # PT_INTERP
            sys.exit(0)
    sys.exit(1)


def cmd_samenames(a):
    na = {n for n in os.listdir(a.dir_a) if n.endswith(".lock")}
    nb = {n for n in os.listdir(a.dir_b) if n.endswith(".lock")}
    if na != nb or len(na) != a.n:
        print("lock names differ: %d in %s, %d in %s, %d in common, want %d"
              % (len(na), a.dir_a, len(nb), a.dir_b, len(na & nb), a.n), file=sys.stderr)
        sys.exit(1)
    print("same %d lock file names in both lock dirs" % len(na))


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return sum(v), idle


def cmd_busy(a):
    """Print how busy the CPUs were over the next a.seconds (0-100 %)."""
    t0, i0 = cpu_times()
    time.sleep(a.seconds)
    t1, i1 = cpu_times()
    print("%.0f" % (100.0 * (1 - (i1 - i0) / max(1, t1 - t0))))


def cmd_hold(a):
    """Lock, say so, wait for a line on stdin, record the time, exit.

    The kernel releases the flock while tearing the process down, a few
    microseconds after the recorded instant.
    """
    fd = os.open(a.lockfile, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(1, b"locked\n")
    sys.stdin.buffer.readline()
    t = time.time_ns()
    os.write(1, b"%d\n" % t)
    os._exit(0)


# ------------------------------------------------------------------ handoff

# Syscall numbers of poll/ppoll, where a waiting withlock sleeps.
POLL_SYSCALLS = {"x86_64": {"7", "271"}, "aarch64": {"73"}}.get(platform.machine())


def withlock_blocked(pid):
    """withlock is waiting: it has an inotify watch and a thread asleep in
    poll/ppoll (only its watcher calls poll; the Go runtime uses epoll)."""
    watching = False
    for info in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(info) as f:
                if "inotify wd:" in f.read():
                    watching = True
                    break
        except OSError:
            pass
    if not watching:
        return False
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(task + "/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state != "S":
                continue
            if POLL_SYSCALLS is not None:
                with open(task + "/syscall") as f:
                    if f.read().split()[0] in POLL_SYSCALLS:
                        return True
            else:
                with open(task + "/wchan") as f:
                    if "poll" in f.read():
                        return True
        except (OSError, IndexError):
            pass
    return False


def flock_blocked(pid, ino):
    """flock(1) is queued on the lock: /proc/locks shows it as a blocked
    waiter ("->") on the lock file's inode."""
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 6 and fields[1] == "->" and fields[2] == "FLOCK" \
                    and fields[5] == str(pid) and fields[6].endswith(":%d" % ino):
                return True
    return False


def children(pid):
    kids = []
    for f in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(f) as fh:
                kids += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return kids


def wait_until(pred, proc, what, deadline=10.0):
    end = time.monotonic() + deadline
    while not pred():
        if proc.poll() is not None:
            raise SystemExit("%s exited (%s) before blocking" % (what, proc.returncode))
        if time.monotonic() > end:
            proc.kill()
            raise SystemExit("%s did not block within %.0f s" % (what, deadline))
        time.sleep(0.0005)


def trial(variant, tool, argv, lf, ino):
    holder = fd = None
    if variant == "exit":
        holder = subprocess.Popen([sys.executable, __file__, "hold", lf],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if holder.stdout.readline() != b"locked\n":
            raise SystemExit("holder failed")
    else:
        fd = os.open(lf, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
    w = subprocess.Popen(argv, stdout=subprocess.PIPE)
    if tool in ("flock", "flock2"):
        wait_until(lambda: flock_blocked(w.pid, ino), w, "flock -w")
    elif tool in ("floor", "park"):
        # handoffwait: blocked itself (floor) or through its parked child.
        wait_until(lambda: any(flock_blocked(p, ino) for p in [w.pid] + children(w.pid)), w, tool)
    else:
        # withlock waits for a busy lock in flock(2), as flock -w does (a
        # blocked request in /proc/locks); the inotify-and-poll sleep is
        # how it waits for slots and queued waiters.
        wait_until(lambda: flock_blocked(w.pid, ino) or withlock_blocked(w.pid), w, "withlock --wait")
    # Release, with the instant taken immediately before.
    if variant == "close":
        t = time.time_ns()
        os.close(fd)
    elif variant == "unlock":
        t = time.time_ns()
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:
        holder.stdin.write(b"go\n")
        holder.stdin.flush()
        t = int(holder.stdout.readline())
        holder.wait()
    out, _ = w.communicate(timeout=40)
    if fd is not None and variant == "unlock":
        os.close(fd)
    if w.returncode != 0:
        raise SystemExit("%s waiter exited %d" % (tool, w.returncode))
    return (int(out) - t) / 1e6


def cmd_handoff(a):
    os.makedirs(a.lock_dir, exist_ok=True)
    # withlock creates the lock file; the Python rule must name the same one.
    subprocess.run([a.withlock, "--lock-dir", a.lock_dir, "--paths", a.target, "--", "true"],
                   check=True)
    lf = lockpath(a.lock_dir, a.target)
    if not os.path.exists(lf):
        raise SystemExit("withlock did not create %s (Python rule mismatch?)" % lf)
    ino = os.stat(lf).st_ino
    flock = shutil.which("flock")
    argv = {
        "withlock": [a.withlock, "--lock-dir", a.lock_dir, "--wait", "30s",
                     "--paths", a.target, "--", a.stamp],
        "flock": [flock, "-w", "30", lf, a.stamp],
    }
    if a.twice:
        # flock -w a second time, as a waiter of its own: how far two runs
        # of the same program differ in this run (the noise).
        argv["flock2"] = argv["flock"]
    # Bare Go waiters (tests/bench/handoffwait), for what is Go's floor.
    for mode in a.bare:
        argv[mode] = [a.handoffwait, "-mode", mode, "--lock-dir", a.lock_dir, "--wait", "30s",
                      "--paths", os.path.realpath(a.target), "--", a.stamp]
    tools = list(argv)
    plan = [("close", a.n), ("exit", max(1, a.n * 2 // 5)), ("unlock", max(1, a.n // 5))]
    res = {}
    rng = random.Random(a.seed)
    for variant, count in plan:
        for i in range(count):
            # Each round in an order of its own, shuffled: drift hits all
            # alike, and no waiter always runs after the same one (a
            # rotation did that, and the one after flock -w found its
            # pages warm: 0.91× for flock -w against itself).
            order = tools[:]
            rng.shuffle(order)
            for tool in order:
                res.setdefault(variant, {}).setdefault(tool, []).append(
                    trial(variant, tool, argv[tool], lf, ino))
    with open(a.out, "w") as f:
        json.dump({"lockfile": lf, "results": res}, f)


# ------------------------------------------------------------------- report

def pct(xs, p):
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def ms(x):
    return "%.3f" % (x * 1e3)


def name_of(command):
    """hyperfine names a parameter-scan benchmark by its command line."""
    if "pyrule_acquire.py" in command and " " in command:
        return "python"
    if "/withlock " in command:
        return "withlock"
    return command


def load(files):
    """hyperfine --export-json files -> {name: {"t": [s...], "cpu": s}},
    merging rounds; cpu is the mean user+system time per run."""
    out = {}
    for fn in files:
        with open(fn) as f:
            for r in json.load(f)["results"]:
                d = out.setdefault(name_of(r["command"]), {"t": [], "cpu_sum": 0.0, "codes": []})
                d["t"].extend(r["times"])
                d["cpu_sum"] += (r["user"] + r["system"]) * len(r["times"])
                d["codes"].extend(r.get("exit_codes", []))
    for d in out.values():
        d["cpu"] = d["cpu_sum"] / len(d["t"])
    return out


def load_runs(files):
    return {k: v["t"] for k, v in load(files).items()}


def report_percall(files):
    res = load(files)
    order = [n for n in ("withlock", "withlock-cgo", "anchor", "flock") if n in res]
    a, fl = res["anchor"], res["flock"]
    a_mean, a_med = statistics.fmean(a["t"]), statistics.median(a["t"])
    f_med = statistics.median(fl["t"])
    print("| command | runs | mean ms | median ms | p90 ms | min ms | CPU ms (user+sys) | ×anchor (mean) | ×anchor (median) | ×anchor (CPU) | ×flock (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in order:
        t = res[n]["t"]
        mean, med = statistics.fmean(t), statistics.median(t)
        print("| %s | %d | %s ± %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f |" % (
            n, len(t), ms(mean), ms(statistics.stdev(t)), ms(med), ms(pct(t, 90)), ms(min(t)),
            ms(res[n]["cpu"]), mean / a_mean, med / a_med, res[n]["cpu"] / a["cpu"], med / f_med))
    w = res["withlock"]
    print()
    print("withlock/anchor = %.2f (mean), %.2f (median), %.2f (CPU time); goal ≤ 1.3. "
          "withlock/flock = %.2f (median)." % (
              statistics.fmean(w["t"]) / a_mean, statistics.median(w["t"]) / a_med,
              w["cpu"] / a["cpu"], statistics.median(w["t"]) / f_med))
    if "withlock-cgo" in res:
        c = res["withlock-cgo"]
        print("The cgo build costs %+.3f ms per call (median), %+.3f ms CPU, over the CGO_ENABLED=0 one." % (
            (statistics.median(c["t"]) - statistics.median(w["t"])) * 1e3, (c["cpu"] - w["cpu"]) * 1e3))


def report_tenk(steady, first):
    rs, rf = load_runs(steady), load_runs([first])
    print("| run | command | runs | mean ms | median ms | min ms | max ms | Python ÷ this (median) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, runs in (("steady state (lock files exist)", rs), ("first run (creates 10,000 lock files)", rf)):
        p_med = statistics.median(runs["python"])
        for n in ("withlock", "python", "floor", "floor-pregrow"):
            if n not in runs:
                continue
            t = runs[n]
            print("| %s | %s | %d | %s | %s | %s | %s | %.1f× |" % (
                label, n, len(t), ms(statistics.fmean(t)), ms(statistics.median(t)), ms(min(t)),
                ms(max(t)), p_med / statistics.median(t)))
    print()
    for label, files in (("steady-state", steady), ("first", [first])):
        for name, d in load(files).items():
            bad = [c for c in d["codes"] if c != 0]
            if bad:
                print("**%s exited %s in %d of its %d %s runs.**" % (
                    name, sorted(set(bad)), len(bad), len(d["codes"]), label))
                print()
    for label, runs in (("steady state", rs), ("first run", rf)):
        w, p = runs["withlock"], runs["python"]
        print("%s: withlock is %.1f× faster than Python (mean), %.1f× (median); goal ≥ 20×." % (
            label, statistics.fmean(p) / statistics.fmean(w), statistics.median(p) / statistics.median(w)))
    print()
    print("floor = raw system calls only (tests/bench/floor), a lower bound, not the rule.")


def report_handoff(fn):
    with open(fn) as f:
        res = json.load(f)["results"]
    what = {
        "close": "holder closes the lock fd",
        "exit": "holder process exits",
        "unlock": "holder LOCK_UNs, fd kept open",
    }
    print("| release | waiter | n | p50 ms | p90 ms | max ms | mean ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for variant in ("close", "exit", "unlock"):
        if variant not in res:
            continue
        for tool in ("withlock", "flock"):
            t = res[variant][tool]
            name = "withlock --wait 30s" if tool == "withlock" else "flock -w 30"
            print("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f |" % (
                what[variant], name, len(t), statistics.median(t), pct(t, 90), max(t), statistics.fmean(t)))


def cmd_handoffratio(a):
    """The handoff table with every waiter of the run (or of several runs,
    pooled), p50 as a ratio to flock -w's p50 in the same runs."""
    res = {}
    for fn in a.json:
        with open(fn) as f:
            for variant, tools in json.load(f)["results"].items():
                for tool, t in tools.items():
                    res.setdefault(variant, {}).setdefault(tool, []).extend(t)
    names = {"withlock": "withlock --wait", "flock": "flock -w", "flock2": "flock -w again (the noise)",
             "floor": "bare Go: flock(2) + os/exec", "park": "bare Go: parked child, exec in place"}
    print("| release | waiter | n | p50 ms | p90 ms | p50 / flock -w | 95% interval |")
    print("|---|---|---:|---:|---:|---:|---|")
    rng = random.Random(1)
    for variant in ("close", "exit", "unlock"):
        if variant not in res:
            continue
        fl = res[variant]["flock"]
        f50 = statistics.median(fl)
        tools = [n for n in ("withlock", "flock", "flock2", "floor", "park") if n in res[variant]]
        for tool in tools:
            t = res[variant][tool]
            ci = ""
            if tool != "flock":
                lo, hi = ratio_interval(t, fl, rng)
                ci = "%.2f–%.2f×" % (lo, hi)
            print("| %s | %s | %d | %.3f | %.3f | %.2f× | %s |" % (
                variant, names.get(tool, tool), len(t), statistics.median(t), pct(t, 90),
                statistics.median(t) / f50, ci))


def ratio_interval(a, b, rng, rounds=2000):
    """A bootstrap 95% interval of median(a) / median(b): both samples
    resampled with replacement, rounds times."""
    rs = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                for _ in range(rounds))
    return rs[int(rounds * 0.025)], rs[int(rounds * 0.975) - 1]


def cmd_report(a):
    print("### 1. Per call: `withlock --lock-dir D --paths a,b --slots 4 -- true`\n")
    report_percall(a.percall)
    print("\n### 2. 10,000 path locks: acquire and release\n")
    report_tenk(a.tenk, a.tenk_first)
    print("\n### 3. --wait handoff latency (release → waiter's command running)\n")
    report_handoff(a.handoff)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("mktree"); s.add_argument("root"); s.add_argument("n", type=int); s.add_argument("list")
    s = sub.add_parser("lockpath"); s.add_argument("lockdir"); s.add_argument("path")
    s = sub.add_parser("isdynamic"); s.add_argument("binary")
    s = sub.add_parser("samenames"); s.add_argument("dir_a"); s.add_argument("dir_b"); s.add_argument("n", type=int)
    s = sub.add_parser("hold"); s.add_argument("lockfile")
    s = sub.add_parser("busy"); s.add_argument("seconds", type=float, nargs="?", default=1.0)
    s = sub.add_parser("handoff")
    s.add_argument("--withlock", required=True); s.add_argument("--stamp", required=True)
    s.add_argument("--lock-dir", required=True); s.add_argument("--target", required=True)
    s.add_argument("--out", required=True); s.add_argument("-n", type=int, default=50)
    s.add_argument("--handoffwait", help="tests/bench/handoffwait, for --bare")
    s.add_argument("--bare", action="append", default=[], choices=["floor", "park"],
                   help="also time a bare Go waiter (repeatable)")
    s.add_argument("--seed", type=int, default=1, help="the shuffle's seed")
    s.add_argument("--twice", action="store_true",
                   help="time flock -w twice, as two waiters, to show the run's noise")
    s = sub.add_parser("handoffratio"); s.add_argument("json", nargs="+", help="one run, or several pooled")
    s = sub.add_parser("report")
    s.add_argument("--percall", nargs="+", required=True)
    s.add_argument("--tenk", nargs="+", required=True); s.add_argument("--tenk-first", required=True)
    s.add_argument("--handoff", required=True)
    a = p.parse_args()
    globals()["cmd_" + a.cmd](a)


if __name__ == "__main__":
    main()
