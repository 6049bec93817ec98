#!/usr/bin/env python3
"""The cost of withlock --first-of (docs/benchmarks.md, "First-of cost").

    python3 firstof.py WITHLOCK_DIR WORKDIR [ROUNDS] [LOOP_ROUNDS]

1,000 candidate sets of 2 paths each; the first 999 are held by another
process (one withlock holding their 1,998 locks). Measured in the same run,
in interleaved rounds (each round runs each contender once; posix_spawn +
waitpid, no shell), the time until the command (true) has run on set 999:

  single     withlock --paths A,B --slots 4 -- true    (one free set: the unit)
  first-of   withlock --first-of --candidates-from FILE --slots 4 -- true
  1000 calls withlock -q --paths SET_i --slots 4 -- true for i = 0, 1, ...
             until one does not exit 75 (spawned from this driver, no shell)
  pick loop  python3 pickloop.py FILE -- withlock -q --paths-from - --slots 4 -- true:
             the example blog's former pick.py loop (a Python process that
             runs withlock once per candidate, its paths on stdin)

Prints the median and min of each, and each median as a multiple of
single's. The loops run with -q (no holder lookup in /proc/locks, no
message), which only makes them cheaper than the demo's pick.py was.
"""
import os
import statistics
import subprocess
import sys
import time

N_SETS = 1000


def spawn(argv, env):
    t = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status = os.waitpid(pid, 0)
    return (time.perf_counter_ns() - t) / 1e6, os.waitstatus_to_exitcode(status)


def main():
    bindir, work = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    loop_rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    wl = os.path.join(bindir, "withlock")
    here = os.path.dirname(os.path.abspath(__file__))
    lockdir = os.path.join(work, "locks")
    tree = os.path.join(work, "tree")
    os.makedirs(tree, exist_ok=True)
    sets = [[f"{tree}/ko/post-{i}.md", f"{tree}/en/post-{i}.md"] for i in range(N_SETS)]
    cands = os.path.join(work, "cands")
    with open(cands, "w") as f:
        f.write("\n".join("".join(p + "\n" for p in s) for s in sets))
    held = os.path.join(work, "held")
    with open(held, "w") as f:
        f.write("".join(p + "\n" for s in sets[:-1] for p in s))
    env = dict(os.environ, WITHLOCK_LOCK_DIR=lockdir)
    slot = ["--slots", "4", "--slot-file", os.path.join(work, "slot-{i}.lock")]
    # The other process: holds the first 999 sets until its stdin closes.
    holder = subprocess.Popen([wl, "--paths-from", held, "--", "sh", "-c", "echo ready; exec cat >/dev/null"],
                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if holder.stdout.readline() != b"ready\n":
        sys.exit("firstof.py: the holder did not start")
    try:
        single = [wl, "--paths", ",".join(sets[-1])] + slot + ["--", "/bin/true"]
        first = [wl, "--first-of", "--candidates-from", cands] + slot + ["--", "/bin/true"]

        def calls():
            t = time.perf_counter_ns()
            for s in sets:
                _, rc = spawn([wl, "-q", "--paths", ",".join(s)] + slot + ["--", "/bin/true"], env)
                if rc != 75:
                    break
            if rc != 0 or s is not sets[-1]:
                sys.exit(f"firstof.py: 1000 calls ended with {rc} on {s}")
            return (time.perf_counter_ns() - t) / 1e6

        def pick():
            ms, rc = spawn([sys.executable, os.path.join(here, "pickloop.py"), cands, "--",
                            wl, "-q", "--paths-from", "-"] + slot + ["--", "/bin/true"], env)
            if rc != 0:
                sys.exit(f"firstof.py: the pick loop exited {rc}")
            return ms

        def one(argv):
            ms, rc = spawn(argv, env)
            if rc != 0:
                sys.exit(f"firstof.py: {argv[:3]} exited {rc}")
            return ms

        res = {"single": [], "first-of": [], "1000 calls": [], "pick loop": []}
        for _ in range(3):  # warm up: page cache, lock files exist
            one(single), one(first)
        for r in range(rounds):
            res["single"].append(one(single))
            res["first-of"].append(one(first))
            if r < loop_rounds:
                res["1000 calls"].append(calls())
                res["pick loop"].append(pick())
    finally:
        holder.stdin.close()
        holder.wait()
    base = statistics.median(res["single"])
    print(f"| contender | runs | median ms | min ms | median / single |")
    print(f"|---|---:|---:|---:|---:|")
    for k, v in res.items():
        med = statistics.median(v)
        print(f"| {k} | {len(v)} | {med:.2f} | {min(v):.2f} | ×{med / base:.1f} |")


if __name__ == "__main__":
    main()
