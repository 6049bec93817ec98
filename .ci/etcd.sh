#!/usr/bin/env bash
# The etcd backend's suite (tests/etcd; docs/etcd.md, "Across hosts (etcd)"),
# run twice: against Debian 12's etcd 3.4.23 (older than the minimum safe
# server version, docs/etcd.md "Server versions") and against etcd 3.7
# built from the Go module proxy (tests/etcd/etcdserver, a module of its
# own so that the main module never depends on the server; the build is
# cached by go, about a minute of CPU the first time), side by side. The
# tests start their own 3-member cluster on loopback ports 23791-23793 and
# 23801-23803 (ETCD_TEST_PORTS=CLIENT,PEER moves them; the TLS test adds a
# member at +5; the second server's run uses them + 1000), so a packaged
# etcd on 2379/2380 is in nobody's way. The suite is kept
# out of tests/all.sh's go test (build tag etcd) so that it never runs next
# to the CPU-heavy stress tests: a starved cluster elects leaders and makes
# lease timing flaky. It installs nothing (.ci/run does, under CI): without
# etcd it says how to install it and its tests skip, except with CI set,
# where a missing etcd or any skipped test or subtest fails the run.
#
#   bash .ci/etcd.sh                 # vet, run the suite on both versions
#   ETCD_SERVERS=debian bash .ci/etcd.sh    # or: built
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

echo "== go vet -tags etcd ./tests/etcd/..."
go vet -tags etcd ./tests/etcd/...

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# suite NAME [ETCD_BIN]: one run of the suite against one server.
total_passed=0 total_failed=0 total_skipped=0 failed_runs=""
# run NAME BIN PORTS: one run of the suite against one server, its output
# in $tmp/NAME.log and its exit status in $tmp/NAME.status.
run() {
	local name=$1 bin=$2 ports=$3 status=0
	ETCD_BIN=$bin ETCD_TEST_PORTS=$ports go test -tags etcd -count=1 -timeout 15m -v ./tests/etcd/ >"$tmp/$name.log" 2>&1 || status=$?
	echo "$status" >"$tmp/$name.status"
}
# report NAME BIN: prints a run's output (without the === lines) and its
# counts, subtests included (their result lines are indented).
report() {
	local name=$1 bin=$2 log="$tmp/$1.log" status passed failed skipped
	echo "== go test -tags etcd ./tests/etcd/ against $name: $(${bin:-etcd} --version 2>/dev/null | head -1)"
	grep -v '^=== ' "$log" || true
	status=$(cat "$tmp/$name.status" 2>/dev/null || echo 1)
	passed=$(grep -c '^ *--- PASS' "$log" || true)
	failed=$(grep -c '^ *--- FAIL' "$log" || true)
	skipped=$(grep -c '^ *--- SKIP' "$log" || true)
	echo "etcd $name: $passed passed, $failed failed, $skipped skipped (subtests included)"
	total_passed=$((total_passed + passed)) total_failed=$((total_failed + failed)) total_skipped=$((total_skipped + skipped))
	if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
		failed_runs="$failed_runs $name"
	fi
}

# The two servers' runs go side by side, each with its own cluster on its
# own ports (the second on the first's + 1000): the suite mostly waits
# (frozen members, lease expiries), so two at once take little more than
# one. ETCD_SERIAL=1 runs them one after the other.
ports=${ETCD_TEST_PORTS:-23791,23801}
cport=${ports%,*} pport=${ports#*,}
names=() bins=() portsets=()
for s in ${ETCD_SERVERS:-debian built}; do
	case $s in
	debian)
		names+=(debian) bins+=("") ;;
	built)
		echo "== go build tests/etcd/etcdserver (etcd from the Go module proxy)"
		if (cd tests/etcd/etcdserver && CGO_ENABLED=0 go build -o "$tmp/etcd" .); then
			names+=(built) bins+=("$tmp/etcd")
		else
			echo "the etcd server could not be built from the Go module proxy"
			failed_runs="$failed_runs built(build)"
		fi ;;
	*)
		echo "ETCD_SERVERS: unknown $s (use debian, built)"; exit 2 ;;
	esac
done
pids=()
for i in "${!names[@]}"; do
	p="$((cport + 1000 * i)),$((pport + 1000 * i))"
	if [ -n "${ETCD_SERIAL:-}" ]; then
		run "${names[$i]}" "${bins[$i]}" "$p"
	else
		run "${names[$i]}" "${bins[$i]}" "$p" &
		pids+=($!)
	fi
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
for i in "${!names[@]}"; do
	report "${names[$i]}" "${bins[$i]}"
done

echo "etcd: $total_passed passed, $total_failed failed, $total_skipped skipped (both servers, subtests included)"
if [ -n "$failed_runs" ]; then
	echo "etcd suite failed:$failed_runs"
	exit 1
fi
if [ "$total_skipped" != 0 ] && [ -n "${CI:-}" ]; then
	echo "CI: every etcd test is required here; a skipped test or subtest fails the run"
	exit 1
fi
