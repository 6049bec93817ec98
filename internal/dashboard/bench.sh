#!/usr/bin/env bash
# Load test of GET /api/summary over loopback: the real `cron-gate serve`
# serving 200 declared gates with 100-record journals and a 200-line
# crontab (written by tests/bench/dashgen), wrk against it. Prints
# wrk's report; the README's figures come from it.
#
#   bash internal/dashboard/bench.sh [GATES] [RECORDS] [DURATION] [CONNECTIONS]
#
# Needs wrk (apt-get install -y wrk). Defaults: 200 100 20s 8.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
gates=${1:-200} records=${2:-100} duration=${3:-20s} conns=${4:-8}
command -v wrk >/dev/null || { echo "bench.sh: wrk is missing (apt-get install -y wrk)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/bin/" ./cmd/cron-gate ./tests/bench/dashgen
config=$("$tmp/bin/dashgen" -gates "$gates" -records "$records" -dir "$tmp")
"$tmp/bin/cron-gate" --config "$config" serve --listen 127.0.0.1:0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 200); do
	grep -q 'serving the dashboard on' "$tmp/out" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
	sleep 0.1
done
addr=$(sed -n 's#.*on http://\([^/]*\)/.*#\1#p' "$tmp/out" | head -1)
[ -n "$addr" ] || { echo "bench.sh: the server did not start" >&2; cat "$tmp/err" >&2; exit 1; }
bytes=$(curl -sf "http://$addr/api/summary" | wc -c)
echo "== /api/summary: $gates gates, $records records each, $bytes bytes; wrk -t2 -c$conns -d$duration on $(nproc) CPUs"
wrk -t2 -c"$conns" -d"$duration" --latency "http://$addr/api/summary"
