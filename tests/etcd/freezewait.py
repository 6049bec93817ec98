#!/usr/bin/env python3
"""A --wait waiter behind a holder, one etcd member frozen (SIGSTOP) just
before the holder releases: how long until the waiter's command runs.

    go build -o /tmp/etcdbench ./tests/etcd/etcdbench
    sleep 100000 | /tmp/etcdbench -serve /tmp/eps.txt -pids /tmp/pids.txt -ports 29891,29901 &
    python3 tests/etcd/freezewait.py BINDIR "$(cat /tmp/eps.txt)" /tmp/pids.txt 10

BINDIR holds withlock and withlock-etcd. Each trial freezes a member
chosen at random (the leader, the holder's or the waiter's, or none of
theirs), prints when the holder exited (its release landed, or it gave up
on it) and when the waiter's command ran, both counted from the release,
and thaws the member. Figures: docs/etcd.md, "A frozen or cut-off member".
"""
import os, random, signal, subprocess, sys, tempfile, time

bindir, eps, pidfile, trials = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pids = [int(l) for l in open(pidfile).read().split()]
env = dict(os.environ, ETCDCTL_API="3")
tmp = tempfile.mkdtemp(prefix="freezewait-")


def count(prefix):
    out = subprocess.run(["etcdctl", "--endpoints", eps, "get", "--prefix", "--keys-only", prefix],
                         capture_output=True, text=True, env=env, check=True).stdout
    return len([l for l in out.splitlines() if l])


def wait_for(what, cond, secs=20):
    end = time.time() + secs
    while not cond():
        if time.time() > end:
            sys.exit("freezewait: timed out waiting for " + what)
        time.sleep(0.02)


def withlock(prefix, *args, **kw):
    return subprocess.Popen([os.path.join(bindir, "withlock"), "--backend", "etcd", "--endpoints", eps,
                             "--key-prefix", prefix, *args], stderr=subprocess.DEVNULL, **kw)


delays = []
for t in range(trials):
    prefix = "/freezewait/%d/%d" % (os.getpid(), t)
    release, ran = os.path.join(tmp, "release-%d" % t), os.path.join(tmp, "ran-%d" % t)
    holder = withlock(prefix, "--paths", "/srv/a", "--", "sh", "-c",
                      'while [ ! -e "$1" ]; do sleep 0.02; done', "sh", release)
    wait_for("the holder's key", lambda: count(prefix + "/paths/") == 1)
    waiter = withlock(prefix, "--wait", "60s", "--paths", "/srv/a", "--", "sh", "-c",
                      'date +%s.%N > "$1"', "sh", ran)
    wait_for("the waiter's queue key", lambda: count(prefix + "/queue/") == 1)
    m = random.randrange(len(pids))
    os.kill(pids[m], signal.SIGSTOP)
    try:
        t0 = time.time()
        open(release, "w").close()
        holder.wait(timeout=60)
        held = time.time() - t0
        rc = waiter.wait(timeout=60)
        delay = float(open(ran).read()) - t0 if os.path.exists(ran) else float("nan")
    finally:
        os.kill(pids[m], signal.SIGCONT)
    delays.append(delay)
    print("trial %d, member %d frozen: holder exited %.2f s, waiter exited %d, its command ran %.2f s after the release"
          % (t, m, held, rc, delay), flush=True)
    time.sleep(1)  # the thawed member catches up before the next trial
delays.sort()
print("median %.2f s, max %.2f s over %d trials" % (delays[len(delays) // 2], delays[-1], len(delays)))
