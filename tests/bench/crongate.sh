#!/usr/bin/env bash
# cron-gate's per-call cost against the bare Go os/exec runner (the anchor),
# interleaved in one run so that drifting load cancels out (docs/benchmarks.md,
# "cron-gate: start-up cost"):
#
#   bash tests/bench/crongate.sh [ROUNDS]      # default 400
#
# Cases: cron-gate with a 50-gate config (config cache warm: the run path
# that skips kong and the TOML decoder); the same gate with a 10- and a
# 10,000-record journal; withlock and flock -n FILE true for reference.
# With etcd installed (Debian's etcd-server), also a gate whose pauses are
# shared through a one-member etcd on loopback: cron-gate ->
# cron-gate-etcd, and cron-gate-etcd called directly.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
rounds=${1:-400}
d=$(mktemp -d)
etcd_pid=
trap '[ -z "$etcd_pid" ] || kill "$etcd_pid"; rm -rf "$d"' EXIT
CGO_ENABLED=0 go build -tags grpcnotrace -o "$d/bin/" ./cmd/... ./tests/bench/anchor
b=$d/bin
mkdir -p "$d/state" "$d/locks"
mkdir -m 700 "$d/cache" # the cache must be private, or it is not used
{
	echo "state_dir = \"$d/state\""
	for i in $(seq 1 50); do
		printf '[gates.g%d]\ninterval = "30m"\nlegacy_locks = ["/tmp/cron-gate-bench-%d.lock"]\nreason = "gate %d"\n\n' "$i" "$i" "$i"
	done
} >"$d/c50.toml"
export CRON_GATE_CACHE_DIR=$d/cache
# Journals: j10 with 10 records, j10k with 10,000 (history large enough
# that no rotation happens while timing).
sed -i "1a history = 100000" "$d/c50.toml"
printf '[gates.j10]\n[gates.j10k]\n' >>"$d/c50.toml"
for i in $(seq 1 10); do "$b/cron-gate" --config "$d/c50.toml" j10 -- true; done
python3 - "$b/cron-gate" "$d/c50.toml" <<'PY'
import subprocess, sys
# 10,000 runs would take a while; append records the way cron-gate writes
# them, by running it: batches in parallel.
procs = []
for i in range(10000):
    procs.append(subprocess.Popen([sys.argv[1], "--config", sys.argv[2], "j10k", "--", "true"]))
    if len(procs) >= 16:
        for p in procs: p.wait()
        procs = []
for p in procs: p.wait()
PY
for g in g1 j10 j10k; do "$b/cron-gate" --config "$d/c50.toml" $g -- true; done # warm the cache
echo "journal records: j10 $(grep -c end "$d/state/gates/j10/journal.jsonl"), j10k $(grep -c end "$d/state/gates/j10k/journal.jsonl")"
ls -l "$b/cron-gate" "$b/anchor" | awk '{print $5, $NF}'
etcd_cases=()
if command -v etcd >/dev/null; then
	etcd --name b --data-dir "$d/etcd" --listen-client-urls http://127.0.0.1:24379 \
		--advertise-client-urls http://127.0.0.1:24379 --listen-peer-urls http://127.0.0.1:24380 \
		--initial-advertise-peer-urls http://127.0.0.1:24380 --initial-cluster b=http://127.0.0.1:24380 >"$d/etcd.log" 2>&1 &
	etcd_pid=$!
	printf 'state_dir = "%s/state"\n[etcd]\nendpoints = ["http://127.0.0.1:24379"]\n[gates.e]\n' "$d" >"$d/etcd.toml"
	for _ in $(seq 100); do "$b/cron-gate" --config "$d/etcd.toml" e -- true 2>/dev/null && break; sleep 0.1; done
	etcd_cases=("$b/cron-gate --config $d/etcd.toml e -- true" "$b/cron-gate-etcd --config $d/etcd.toml e -- true")
fi
python3 tests/bench/interleave.py "$rounds" \
	"$b/anchor true" \
	"$b/cron-gate --config $d/c50.toml g1 -- true" \
	"$b/cron-gate --config $d/c50.toml j10 -- true" \
	"$b/cron-gate --config $d/c50.toml j10k -- true" \
	"$b/withlock --lock-dir $d/locks --paths a,b --slots 4 -- true" \
	"$(command -v flock) -n $d/flock true" \
	"${etcd_cases[@]}"
