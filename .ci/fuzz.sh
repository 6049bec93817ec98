#!/usr/bin/env bash
# A short run of every fuzz target (go test -fuzz), one at a time: tests/all.sh
# runs it beside the etcd suite. Usage: .ci/fuzz.sh [FUZZTIME] (default 5s
# per target). Fails on a failing input, a panic or a timeout, printing
# the target's output.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
fuzztime=${1:-5s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "-- $pkg $f"
		n=$((n + 1))
		if ! go test "$pkg" -run '^$' -fuzz "^$f\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s -parallel 1 -timeout 5m >"$log" 2>&1; then
			# Go 1.26's fuzz coordinator can fail a target at the
			# -fuzztime boundary with a bare "context deadline
			# exceeded" when a worker is busy as the deadline fires
			# (go.dev/issue/75804, fixed in Go 1.27): nothing was
			# found then. Anything else — a failing input written, a
			# panic, a timeout — fails the run.
			if grep -q 'Failing input written\|panic:\|test timed out' "$log" ||
				[ "$(grep -c '^--- FAIL' "$log")" != 1 ] ||
				! grep -A1 '^--- FAIL' "$log" | tail -1 | grep -qx '[[:space:]]*context deadline exceeded'; then
				cat "$log"
				exit 1
			fi
			echo "   (ended by Go's fuzztime deadline race, go.dev/issue/75804; no failing input; corpus re-run:)"
			go test "$pkg" -run "^$f\$" -count=1 >"$log" 2>&1 || { cat "$log"; exit 1; }
		fi
	done
done
echo "fuzz: $n targets, $fuzztime each, no failing input"
