#!/usr/bin/env bash
# The etcd backend's suite (tests/etcd; README, "Across hosts (etcd)").
# Installs Debian's etcd-server and etcd-client if missing (without letting
# the package start its service), then runs the suite on its own: the tests
# start their own 3-member cluster on loopback ports 23791-23793 and
# 23801-23803 (ETCD_TEST_PORTS=CLIENT,PEER moves them), so a packaged etcd
# on 2379/2380 is in nobody's way. The suite is kept out of tests/all.sh
# (build tag etcd) so that it never runs next to the CPU-heavy stress
# tests: a starved cluster elects leaders and makes lease timing flaky.
# With CI set, a missing etcd or a skipped test fails the run.
#
#   bash .ci/etcd.sh                 # install if needed, vet, run the suite
#   bash .ci/etcd.sh --install-only  # install etcd and stop there
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

install_etcd() {
	export DEBIAN_FRONTEND=noninteractive
	# policy-rc.d exit 101: no service is started by the install.
	local made_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		made_policy=1
	fi
	local rc=0
	{ apt-get update -qq && apt-get install -y -qq etcd-server etcd-client >/dev/null; } || rc=$?
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	# Where systemd runs, keep the packaged service off for good.
	if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
		systemctl disable --now etcd >/dev/null 2>&1 || true
	fi
	return $rc
}
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
	if ! install_etcd; then
		if [ -n "${CI:-}" ]; then
			echo "etcd could not be installed; CI requires the etcd suite"
			exit 1
		fi
		echo "etcd could not be installed: the etcd tests will skip"
	fi
fi
if [ "${1:-}" = --install-only ]; then
	command -v etcd >/dev/null
	exit
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
passed=$(grep -c '^--- PASS' "$log" || true)
failed=$(grep -c '^--- FAIL' "$log" || true)
skipped=$(grep -c '^--- SKIP' "$log" || true)
echo "etcd: $passed passed, $failed failed, $skipped skipped"
if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
	echo "etcd suite failed"
	exit 1
fi
if [ "$skipped" != 0 ] && [ -n "${CI:-}" ]; then
	echo "CI: every etcd test is required here; a skipped test fails the run"
	exit 1
fi
