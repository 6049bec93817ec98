#!/usr/bin/env bash
# The --wait handoff latency of withlock against flock -w and two bare Go
# waiters, in one run (docs/benchmarks.md, "What is Go's floor"):
#   bash tests/bench/handoff.sh [N]
# N releases by close per waiter (default 100; 2N/5 by exit, N/5 by
# LOCK_UN), each round's waiters in a shuffled order. flock -w runs twice,
# as two waiters: their difference is the run's noise. The bare waiters
# (tests/bench/handoffwait): "floor" blocks in flock(2) and starts the
# command with os/exec as withlock does; "park" starts the command's
# process before the wait, blocked in flock(2) itself, and execs the
# command in place (no fork after the release).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/withlock-handoff.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/withlock ./tests/bench/stamp ./tests/bench/handoffwait)
mkdir -p "$tmp/locks"
touch "$tmp/target"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(git -C "$root" rev-parse --short HEAD)"
python3 "$here/bench.py" handoff --withlock "$tmp/withlock" --stamp "$tmp/stamp" \
	--lock-dir "$tmp/locks" --target "$tmp/target" --out "$tmp/handoff.json" -n "${1:-100}" \
	--handoffwait "$tmp/handoffwait" --bare floor --bare park --twice
python3 "$here/bench.py" handoffratio "$tmp/handoff.json"
# HANDOFF_JSON=FILE keeps the run's samples, for pooling several runs:
#   python3 tests/bench/bench.py handoffratio RUN1.json RUN2.json ...
if [ -n "${HANDOFF_JSON:-}" ]; then cp "$tmp/handoff.json" "$HANDOFF_JSON"; fi
