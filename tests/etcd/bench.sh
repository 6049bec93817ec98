#!/usr/bin/env bash
# Benchmarks withlock's etcd backend against a 3-member loopback etcd
# cluster (started and stopped by etcdbench), in one run next to
# `etcdctl lock` and the client's concurrency.Mutex recipe, plus the
# per-call cost of the local withlock with and without the --backend scan
# (the only thing the etcd backend adds to the local path). The README's
# figures come from here.
#
#   bash tests/etcd/bench.sh [-n 300] [-secs 3] [-workers 8]
#   BEFORE=REV bash tests/etcd/bench.sh -contended [-secs 6] [-rounds 4]
#
# BEFORE=REV adds withlock built from git revision REV beside this tree's.
# -contended times only 8 processes on one key (withlock --backend etcd
# --wait against etcdctl lock); BEFORE=REV adds withlock built from git
# revision REV as a third contender, in the same alternating rounds.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
	echo "bench.sh: etcd or etcdctl is missing (apt-get install -y etcd-server etcd-client)" >&2
	exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CGO_ENABLED=0 go build -tags grpcnotrace -o "$out/" ./cmd/...
if [ -n "${BEFORE:-}" ]; then
	mkdir -p "$out/before-src" "$out/before"
	git archive "$BEFORE" | tar -x -C "$out/before-src"
	(cd "$out/before-src" && CGO_ENABLED=0 go build -tags grpcnotrace -o "$out/before/" ./cmd/withlock ./cmd/withlock-etcd)
	set -- -before "$out/before" "$@"
fi

# The same tree with withlock's dispatch to withlock-etcd removed.
mkdir "$out/tree"
git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C "$out/tree"
python3 - "$out/tree/internal/withlock/kong.go" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s2 = re.sub(r"\n\tif code, done := wc\.Dispatch\(args\); done \{\n.*?\n\t\}\n", "\n", s, flags=re.S)
assert s2 != s, "Dispatch not found in internal/withlock/kong.go"
open(p, "w").write(s2)
PY
(cd "$out/tree" && CGO_ENABLED=0 go build -tags grpcnotrace -o "$out/withlock-nodispatch" ./cmd/withlock)

echo "binaries (CGO_ENABLED=0):"
for b in withlock withlock-nodispatch withlock-etcd; do
	printf '  %-20s %5.1f MB, %d symbols from go.etcd.io\n' "$b" \
		"$(awk -v s="$(stat -c %s "$out/$b")" 'BEGIN { print s / 1048576 }')" \
		"$(go tool nm "$out/$b" | grep -c 'go\.etcd\.io' || true)"
done
echo
go run ./tests/etcd/etcdbench -bin "$out" "$@"
