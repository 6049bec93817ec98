#!/usr/bin/env bash
# The --first-of cost benchmark (docs/benchmarks.md, "First-of cost"):
#   bash tests/bench/firstof.sh [ROUNDS [LOOP_ROUNDS]]
# Builds withlock (CGO_ENABLED=0, as released) into a temp dir and runs
# tests/bench/firstof.py there: 1,000 two-path candidate sets, the first 999
# held by another process; one --first-of call vs one plain call vs 1,000
# plain calls vs the example blog's former pick.py loop, interleaved in one
# run. Defaults: 30 rounds, of which 3 include the two loops (~1 minute quiet).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/withlock-firstof.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/bin/" ./cmd/withlock)
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(go version | cut -d' ' -f3)" >&2
python3 "$here/firstof.py" "$tmp/bin" "$tmp" "${1:-30}" "${2:-3}"
