#!/usr/bin/env python3
"""Sums a `perf script -F comm,period,ip,sym` dump of a contended run
(profile-contended.sh): each program's CPU per lock cycle, and what the
two withlock binaries spend theirs on.

    profile_agg.py PERF.TXT CYCLES RUN_SECS SAMPLED_SECS HZ

CYCLES is the number of lock cycles the loops finished in RUN_SECS; the
samples cover SAMPLED_SECS of them, so the cycles sampled are
CYCLES * SAMPLED_SECS / RUN_SECS (the rate is steady after the warm-up).
"""
import collections
import sys

# What a stack of one of our Go binaries is spent on: the first rule whose
# function appears in the stack names it.
RULES = [
    ("exec and exit (kernel)", ("__x64_sys_execve", "do_exit", "exit_mmap", "__x64_sys_exit_group")),
    ("package initialisation", ("runtime.doInit1",)),
    ("Go runtime start (before main)", ("runtime.rt0_go.abi0", "runtime.schedinit")),
    ("goroutine stack growth", ("runtime.morestack.abi0",)),
    ("Go scheduler: threads, parking, waking", ("runtime.mstart.abi0", "runtime.mcall", "runtime.sysmon", "__do_sys_clone", "__x64_sys_futex")),
    ("HTTP/2 and gRPC framing (x/net, etcdv3)", ("golang.org/x/net/http2", "internal/etcdv3")),
    ("starting the command", ("internal/runner.(*Child).Start", "internal/runner.Warm", "os.StartProcess")),
    ("the rest of the lock's work (main)", ("main.main",)),
]


def parse(path):
    """Yields (comm, frames) per sample."""
    comm, frames = None, []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if comm is not None:
                    yield comm, frames
                comm, frames = None, []
                continue
            if not line.startswith("\t"):
                comm = line.split()[0]
                frames = []
                continue
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1].rsplit(" (", 1)[0].split("+0x")[0])
    if comm is not None:
        yield comm, frames


def category(frames):
    for name, keys in RULES:
        for fr in frames:
            if any(k in fr for k in keys):
                return name
    return "other"


def main():
    path, cycles, run, secs, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    sampled = cycles * secs / run
    if sampled <= 0:
        sys.exit("profile_agg.py: no cycle finished")
    per = collections.Counter()
    cats = {"withlock-etcd": collections.Counter(), "withlock": collections.Counter()}
    n = 0
    for comm, frames in parse(path):
        n += 1
        per[comm] += 1
        if comm in cats:
            cats[comm][category(frames)] += 1
    ms = lambda k: k / hz * 1000 / sampled
    print(f"{cycles} cycles in {run:.0f} s ({cycles / run:.1f}/s); {n} samples at {hz:.0f} Hz over {secs:.0f} s")
    print()
    print("| program | CPU per cycle | share |")
    print("|---|---:|---:|")
    for comm, k in per.most_common(8):
        print(f"| {comm} | {ms(k):.2f} ms | {100 * k / n:.1f}% |")
    for comm, c in cats.items():
        tot = sum(c.values())
        if not tot:
            continue
        print()
        print(f"| {comm}: spent on | CPU per cycle | of {comm} |")
        print("|---|---:|---:|")
        for name, _ in RULES + [("other", ())]:
            if c[name]:
                print(f"| {name} | {ms(c[name]):.2f} ms | {100 * c[name] / tot:.0f}% |")


if __name__ == "__main__":
    main()
