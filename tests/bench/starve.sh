#!/usr/bin/env bash
# The starvation benchmark and the handoff latency after fair waiting
# (docs/benchmarks.md, "Fair waiting"), on either backend:
#   bash tests/bench/starve.sh [--backend local|etcd] [ROUNDS [WAIT [BASE]]]
# Builds withlock from this tree ("after") and from git revision BASE
# (default: the commit before fair waiting on that backend, "before"), then runs
# tests/bench/starve.py: one 40-path set with --wait WAIT (default 60s)
# against four loops of single-path jobs holding 50 ms each, ROUNDS rounds
# (default 3; a round of "before" lasts up to WAIT). Then the --wait
# handoff latency of both against flock -w in the same run
# (tests/bench/bench.py handoff, twice 20 releases by close per binary;
# local backend only). With --backend etcd it builds withlock-etcd too and
# runs on a 3-member loopback etcd that tests/etcd/etcdbench starts
# (ports STARVE_ETCD_PORTS, else ETCD_TEST_PORTS, else 23991,24001).
set -euo pipefail
backend=local
if [ "${1:-}" = --backend ]; then
	backend=$2
	shift 2
fi
case $backend in
local) grep='^Fair waiting on the local backend' ;;
etcd) grep='^etcd: fair waiting' ;;
*) echo "starve.sh: --backend local or etcd, not $backend" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
base=${3:-$(git -C "$root" log --format=%H -1 --grep="$grep")~1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/withlock-starve.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/before-src" "$tmp/after" "$tmp/before"
git -C "$root" archive "$base" | tar -x -C "$tmp/before-src"
cmds=./cmd/withlock
[ "$backend" = etcd ] && cmds="./cmd/withlock ./cmd/withlock-etcd"
(cd "$tmp/before-src" && CGO_ENABLED=0 go build -tags grpcnotrace -o "$tmp/before/" $cmds)
(cd "$root" && CGO_ENABLED=0 go build -tags grpcnotrace -o "$tmp/after/" $cmds ./tests/bench/stamp)
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; backend $backend; before = $(git -C "$root" rev-parse --short "$base")" >&2
if [ "$backend" = etcd ]; then
	(cd "$root" && go build -o "$tmp/etcdbench" ./tests/etcd/etcdbench)
	mkfifo "$tmp/up"
	"$tmp/etcdbench" -ports "${STARVE_ETCD_PORTS:-${ETCD_TEST_PORTS:-23991,24001}}" -serve "$tmp/endpoints" <"$tmp/up" >/dev/null &
	exec 9>"$tmp/up" # the cluster stays up while fd 9 is open
	trap 'exec 9>&-; wait; rm -rf "$tmp"' EXIT
	for _ in $(seq 300); do [ -s "$tmp/endpoints" ] && break; sleep 0.1; done
	export WITHLOCK_ETCD_ENDPOINTS=$(cat "$tmp/endpoints")
	python3 "$here/starve.py" --backend etcd "$tmp/work" "${1:-3}" "${2:-60s}" before="$tmp/before/withlock" after="$tmp/after/withlock"
	exit 0
fi
python3 "$here/starve.py" "$tmp/work" "${1:-3}" "${2:-60s}" before="$tmp/before/withlock" after="$tmp/after/withlock"
mkdir -p "$tmp/tree"
# Handoff: before and after, each against flock -w, twice, alternating.
for i in 1 2; do
	for v in before after; do
		python3 "$here/bench.py" handoff --withlock "$tmp/$v/withlock" --stamp "$tmp/after/stamp" \
			--lock-dir "$tmp/hand-locks-$v" --target "$tmp/tree/handoff-target-$v" --out "$tmp/handoff-$v-$i.json" -n "${HANDOFF_N:-20}"
	done
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
res = {}
for v in ("before", "after"):
    for i in (1, 2):
        for variant, tools in json.load(open(f"{sys.argv[1]}/handoff-{v}-{i}.json"))["results"].items():
            for tool, xs in tools.items():
                name = f"withlock ({v})" if tool == "withlock" else f"flock -w (beside {v})"
                res.setdefault(variant, {}).setdefault(name, []).extend(xs)
print()
print("| release by | waiter | n | p50 ms | p90 ms | max ms |")
print("|---|---|---:|---:|---:|---:|")
for variant, tools in res.items():
    for tool, xs in sorted(tools.items()):
        xs.sort()
        print(f"| {variant} | {tool} | {len(xs)} | {statistics.median(xs):.3f} | {xs[int(len(xs) * 0.9) - 1]:.3f} | {xs[-1]:.3f} |")
PY
