#!/usr/bin/env bash
# Where a contended cycle's CPU goes: 8 processes take turns on one key
# (withlock --backend etcd --wait, as bench.sh -contended runs them) against
# a 3-member loopback etcd cluster, while `perf record -a` samples the
# whole machine. Prints each program's CPU per cycle, then what the two
# withlock binaries spend it on (docs/benchmarks.md, "Where a contended
# cycle goes").
#
#   bash tests/etcd/profile-contended.sh [-secs 8] [-ports 27891,27901]
#
# Needs etcd, etcdctl and perf (linux-perf), as root or with
# kernel.perf_event_paranoid at 0 or below (perf record -a). A diagnostic,
# not a test: it runs only when called.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
secs=8 ports=27891,27901
while [ $# -gt 0 ]; do
	case $1 in
	-secs) secs=$2; shift 2 ;;
	-ports) ports=$2; shift 2 ;;
	*) echo "profile-contended.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
for t in etcd etcdctl perf python3; do
	if ! command -v "$t" >/dev/null; then
		echo "profile-contended.sh: $t is missing" >&2
		exit 1
	fi
done

out=$(mktemp -d)
cleanup() {
	# End of its stdin stops the cluster (etcdbench -serve).
	exec 9>&- 2>/dev/null || true
	[ -n "${hold:-}" ] && wait "$hold" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT
# Symbols kept (no -s -w) so that perf can name Go functions.
CGO_ENABLED=0 go build -trimpath -o "$out/bin/" ./cmd/withlock ./cmd/withlock-etcd
go build -o "$out/etcdbench" ./tests/etcd/etcdbench

# The cluster stays up while its stdin (a FIFO held open here) is open.
mkfifo "$out/hold"
"$out/etcdbench" -serve "$out/eps" -ports "$ports" <"$out/hold" >"$out/serve.log" 2>&1 &
exec 9>"$out/hold"
hold=$!
for _ in $(seq 300); do
	[ -s "$out/eps" ] && break
	sleep 0.1
done
if [ ! -s "$out/eps" ]; then
	echo "profile-contended.sh: the cluster did not start:" >&2
	cat "$out/serve.log" >&2
	exit 1
fi
eps=$(cat "$out/eps")

# Eight loops; each counts its cycles. Warm-up of 2 s before sampling.
run=$((secs + 3))
for w in $(seq 8); do
	(
		n=0
		end=$((SECONDS + run))
		while ((SECONDS < end)); do
			"$out/bin/withlock" --backend etcd --endpoints "$eps" --key-prefix /profile \
				--wait 1m --paths /srv/contended -- true 2>/dev/null && n=$((n + 1))
		done
		echo "$n" >"$out/count.$w"
	) &
done
sleep 2
echo "sampling from $(date -u '+%F %T') UTC"
perf record -q -a -g -F 4000 -o "$out/perf.data" -- sleep "$secs" 2>/dev/null
wait_loops() {
	for w in $(seq 8); do
		while [ ! -s "$out/count.$w" ]; do sleep 0.2; done
	done
}
wait_loops
total=$(cat "$out"/count.* | awk '{ s += $1 } END { print s }')
perf script -i "$out/perf.data" -F comm,period,ip,sym 2>/dev/null >"$out/perf.txt"
python3 tests/etcd/profile_agg.py "$out/perf.txt" "$total" "$run" "$secs" 4000
