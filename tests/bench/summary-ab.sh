#!/usr/bin/env bash
# GET /api/summary for 200 gates (BenchmarkSummary200, handler-level) at a
# base commit and at the work tree, interleaved in one run so that drifting
# load on a shared machine falls on both alike (docs/benchmarks.md,
# "cron-gate serve"):
#
#   bash tests/bench/summary-ab.sh [BASE] [ROUNDS] [CALLS]   # default dbe0dab 11 60
#
# BASE is taken with git archive (no worktree, nothing of the repository
# changes); the work tree's bench_test.go is copied over the base's so that
# both report the same figures (wall and CPU time per call). Prints the
# medians and their ratio, after / before, and the minimums' (load on a
# shared machine only adds time, so the minimum is the steadier figure).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
base=${1:-dbe0dab} rounds=${2:-11} calls=${3:-60}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir "$d/base"
git archive "$base" | tar -x -C "$d/base"
cp internal/dashboard/bench_test.go "$d/base/internal/dashboard/bench_test.go"
# The state it reads is written by tests/bench/dashstate (in
# internal/dashboard/benchstate before 565dcde): the work tree's, in both.
mkdir -p "$d/base/tests/bench"
cp -r tests/bench/dashstate "$d/base/tests/bench/"
(cd "$d/base" && go test -c -o "$d/before.test" ./internal/dashboard)
go test -c -o "$d/after.test" ./internal/dashboard
for i in $(seq "$rounds"); do
	for b in before after; do
		"$d/$b.test" -test.run '^$' -test.bench '^BenchmarkSummary200$' -test.benchtime "${calls}x" |
			awk -v b="$b" '/^BenchmarkSummary200/ { for (i = 2; i < NF; i++) if ($(i+1) == "cpu-ns/op") c = $i; print b, $3, c }'
	done
done >"$d/out"
python3 - "$d/out" "$base" "$rounds" "$calls" <<'PY'
import statistics, sys
wall, cpu = {}, {}
for line in open(sys.argv[1]):
    b, w, c = line.split()
    wall.setdefault(b, []).append(float(w))
    cpu.setdefault(b, []).append(float(c))
print("BenchmarkSummary200, %s rounds of %s calls, interleaved" % (sys.argv[3], sys.argv[4]))
for name, d in (("wall per call", wall), ("CPU per call", cpu)):
    for stat, f in (("median", statistics.median), ("min", min)):
        b, a = f(d["before"]), f(d["after"])
        print("%-14s %-6s before (%s) %5.1f ms   after %5.1f ms   %.2fx" % (name, stat, sys.argv[2], b / 1e6, a / 1e6, a / b))
PY
