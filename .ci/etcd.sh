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
#
# Long mode (not CI's; docs/etcd.md, "Server versions"): ETCD_SERVERS also
# takes an etcd release, v3.5.36 say, built from the Go module proxy into
# the temporary dir (tests/etcd/etcdserver's main.go in a module of its own
# that requires that server version; the committed go.mod is not touched),
# and ETCD_LONG=1 runs the suite on debian, built, v3.5.36 and v3.6.17. At
# most two runs go at once (ETCD_SERIAL=1: one), each N-th on ports
# + 1000 * N.
#
#   bash .ci/etcd.sh                 # vet, run the suite on both versions
#   ETCD_SERVERS=debian bash .ci/etcd.sh    # or: built, or v3.5.36
#   ETCD_LONG=1 bash .ci/etcd.sh     # debian, built, v3.5.36, v3.6.17
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

# build_version VERSION OUT: builds etcd server VERSION (v3.5.36 say) from
# the Go module proxy into OUT: tests/etcd/etcdserver's main.go in a fresh
# module in the temporary dir that requires that version alone (a copy of
# the committed go.mod would keep 3.7's api, client and pkg modules, newer
# than the server's own), so the committed go.mod stays as it is.
build_version() {
	local v=$1 out=$2 src="$tmp/src-$1"
	mkdir -p "$src" && cp tests/etcd/etcdserver/main.go "$src/" &&
		(cd "$src" &&
			go mod init github.com/crongate/crongate/tests/etcd/etcdserver &&
			go mod edit -require="go.etcd.io/etcd/server/v3@$v" &&
			go mod tidy &&
			CGO_ENABLED=0 go build -o "$out" .)
}

# The servers' runs go side by side, two at a time, each with its own
# cluster on its own ports (the N-th on the first's + 1000 * N): the suite
# mostly waits (frozen members, lease expiries), so two at once take
# little more than one; more would starve the clusters on a small host.
# ETCD_SERIAL=1 runs them one after the other.
ports=${ETCD_TEST_PORTS:-23791,23801}
cport=${ports%,*} pport=${ports#*,}
servers=${ETCD_SERVERS:-debian built}
if [ -n "${ETCD_LONG:-}" ]; then
	servers="debian built v3.5.36 v3.6.17"
fi
names=() bins=()
for s in $servers; do
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
	v[0-9]*.[0-9]*.[0-9]*)
		echo "== go build etcd server $s (from the Go module proxy)"
		if build_version "$s" "$tmp/etcd-$s"; then
			names+=("$s") bins+=("$tmp/etcd-$s")
		else
			echo "etcd server $s could not be built from the Go module proxy"
			failed_runs="$failed_runs $s(build)"
		fi ;;
	*)
		echo "ETCD_SERVERS: unknown $s (use debian, built or a release such as v3.5.36)"; exit 2 ;;
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
		if [ "${#pids[@]}" -ge 2 ]; then
			for pid in "${pids[@]}"; do wait "$pid" || true; done
			pids=()
		fi
	fi
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
for i in "${!names[@]}"; do
	report "${names[$i]}" "${bins[$i]}"
done

echo "etcd: $total_passed passed, $total_failed failed, $total_skipped skipped (${#names[@]} servers, subtests included)"
if [ -n "$failed_runs" ]; then
	echo "etcd suite failed:$failed_runs"
	exit 1
fi
if [ "$total_skipped" != 0 ] && [ -n "${CI:-}" ]; then
	echo "CI: every etcd test is required here; a skipped test or subtest fails the run"
	exit 1
fi
