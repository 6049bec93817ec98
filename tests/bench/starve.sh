#!/usr/bin/env bash
# The starvation benchmark and the handoff latency after fair waiting
# (docs/benchmarks.md, "Fair waiting"), local backend:
#   bash tests/bench/starve.sh [ROUNDS [WAIT [BASE]]]
# Builds withlock from this tree ("after") and from git revision BASE
# (default: the commit before fair waiting, "before"), then runs
# tests/bench/starve.py: one 40-path set with --wait WAIT (default 60s)
# against four loops of single-path jobs holding 50 ms each, ROUNDS rounds
# (default 3; a round of "before" lasts up to WAIT). Then the --wait
# handoff latency of "after" against flock -w in the same run
# (tests/bench/bench.py handoff, 20 releases by close).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
base=${3:-$(git -C "$root" log --format=%H -1 --grep='^Fair waiting on the local backend')~1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/withlock-starve.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/before-src" "$tmp/after" "$tmp/before"
git -C "$root" archive "$base" | tar -x -C "$tmp/before-src"
(cd "$tmp/before-src" && CGO_ENABLED=0 go build -o "$tmp/before/" ./cmd/withlock)
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/after/" ./cmd/withlock ./tests/bench/stamp)
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; before = $(git -C "$root" rev-parse --short "$base")" >&2
python3 "$here/starve.py" "$tmp/work" "${1:-3}" "${2:-60s}" before="$tmp/before/withlock" after="$tmp/after/withlock"
mkdir -p "$tmp/tree"
python3 "$here/bench.py" handoff --withlock "$tmp/after/withlock" --stamp "$tmp/after/stamp" \
	--lock-dir "$tmp/hand-locks" --target "$tmp/tree/handoff-target" --out "$tmp/handoff.json" -n "${HANDOFF_N:-20}"
python3 - "$tmp/handoff.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
print()
print("| release by | waiter | n | p50 ms | max ms |")
print("|---|---|---:|---:|---:|")
for variant, tools in r.items():
    for tool, xs in tools.items():
        print(f"| {variant} | {tool} | {len(xs)} | {statistics.median(xs):.3f} | {max(xs):.3f} |")
PY
