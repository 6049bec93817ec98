#!/bin/sh
# The busy skip's price of held_by (docs/benchmarks.md): OLD and NEW are
# directories with cron-gate and withlock built from the tree before and
# after. A run of gate "holder" holds x.md; gate "b" is skipped busy, and
# a plain "ok" run goes through; 20 more gates have journals (the look-up
# reads every gate's running runs). N interleaved rounds (interleave.py).
# Usage: sh tests/bench/heldby.sh OLD NEW [N]
set -e
OLD=$1 NEW=$2 N=${3:-300}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d)
export CRON_GATE_STATE_DIR=$D/state CRON_GATE_CONFIG=$D/config.toml CRON_GATE_CACHE_DIR=$D/cache WITHLOCK_LOCK_DIR=$D/locks
mkdir -p "$D/cache"
touch "$D/x.md" "$D/config.toml"
for i in $(seq 1 20); do "$NEW/cron-gate" -q "g$i" -- true; done
setsid "$NEW/cron-gate" -q holder -- "$NEW/withlock" --paths "$D/x.md" -- sleep 3600 &
HP=$!
trap 'kill -- -$HP 2>/dev/null; rm -rf "$D"' EXIT
until grep -q '"event":"start"' "$D/state/gates/holder/journal.jsonl" 2>/dev/null; do sleep 0.05; done
until "$NEW/withlock" who "$D/x.md" >/dev/null 2>&1; [ $? -eq 75 ]; do sleep 0.05; done
echo "busy skip:"
python3 "$HERE/interleave.py" "$N" "$OLD/cron-gate -q b -- $OLD/withlock --paths $D/x.md -- true" "$NEW/cron-gate -q b -- $OLD/withlock --paths $D/x.md -- true"
echo "a run that goes ahead:"
python3 "$HERE/interleave.py" "$N" "$OLD/cron-gate -q ok -- true" "$NEW/cron-gate -q ok -- true"
tail -n 1 "$D/state/gates/b/journal.jsonl"
