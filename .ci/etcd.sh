#!/usr/bin/env bash
# The etcd backend's suite (tests/etcd; docs/etcd.md, "Across hosts (etcd)").
# Runs the suite on its own: the tests start their own 3-member cluster on
# loopback ports 23791-23793 and 23801-23803 (ETCD_TEST_PORTS=CLIENT,PEER
# moves them), so a packaged etcd on 2379/2380 is in nobody's way. The suite
# is kept out of tests/all.sh's go test (build tag etcd) so that it never
# runs next to the CPU-heavy stress tests: a starved cluster elects leaders
# and makes lease timing flaky. It installs nothing (.ci/run does, under
# CI): without etcd it says how to install it and its tests skip, except
# with CI set, where a missing etcd or any skipped test or subtest fails
# the run.
#
#   bash .ci/etcd.sh                 # vet, run the suite
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
	echo "etcd or etcdctl is missing"
	echo "hint: install them with: apt-get install -y etcd-server etcd-client (or run .ci/run, which installs what CI needs)"
	if [ -n "${CI:-}" ]; then
		echo "CI: the etcd suite is required here"
		exit 1
	fi
	echo "the etcd tests will skip"
fi
if command -v etcd >/dev/null; then
	v=$(etcd --version)
	echo "${v%%$'\n'*}"
fi

echo "== go vet -tags etcd ./tests/etcd/..."
go vet -tags etcd ./tests/etcd/...

echo "== go test -tags etcd ./tests/etcd/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -tags etcd -count=1 -timeout 10m -v ./tests/etcd/ 2>&1 | tee "$log" | grep -v '^=== ' || status=$?
[ "${PIPESTATUS[0]}" = 0 ] || status=1
# Subtests too: their result lines are indented.
passed=$(grep -c '^ *--- PASS' "$log" || true)
failed=$(grep -c '^ *--- FAIL' "$log" || true)
skipped=$(grep -c '^ *--- SKIP' "$log" || true)
echo "etcd: $passed passed, $failed failed, $skipped skipped (subtests included)"
if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
	echo "etcd suite failed"
	exit 1
fi
if [ "$skipped" != 0 ] && [ -n "${CI:-}" ]; then
	echo "CI: every etcd test is required here; a skipped test or subtest fails the run"
	exit 1
fi
