#!/usr/bin/env bash
# What a call pays for a shared lock dir's queue full of another user's
# dead tickets (docs/benchmarks.md, "Dead tickets and big tickets"): as
# uid 65533, withlock on a free path beside TICKETS dead tickets of uid
# 65534 (which 65533 may not remove), against withlock with an empty lock
# dir and `flock -n` (the anchor), interleaved in one run
# (tests/bench/interleave.py) so that drifting load cancels out.
#
#   sudo bash tests/bench/deadtickets.sh [ROUNDS [TICKETS]]   # 30 100000
#
# Root only, to act as the two users (setpriv); it builds withlock into a
# temporary dir and removes everything it made.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
if [ "$(id -u)" != 0 ]; then
	echo "deadtickets.sh: run it as root: it acts as two users through setpriv" >&2
	exit 1
fi
rounds=${1:-30} tickets=${2:-100000}
d=$(mktemp -d "${TMPDIR:-/tmp}/withlock-deadtickets.XXXXXX")
trap 'rm -rf "$d"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$d/bin/" ./cmd/withlock)
chmod 755 "$d" "$d/bin"
mkdir -m 1777 "$d/ld" "$d/ld/withlock-queue" "$d/empty"
# Tickets as waiters name them (t-NANOSECONDS-PID), none of them locked.
setpriv --reuid 65534 --regid 65534 --clear-groups sh -c \
	"cd '$d/ld/withlock-queue' && seq -f 't-%020g-1' 1 $tickets | xargs touch"
install -m 0666 /dev/null "$d/flock.lock"
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $tickets dead tickets, $rounds rounds" >&2
setpriv --reuid 65533 --regid 65533 --clear-groups /usr/bin/python3 "$root/tests/bench/interleave.py" "$rounds" \
	"$(command -v flock) -n $d/flock.lock /bin/true" \
	"$d/bin/withlock --lock-dir $d/empty --paths $d/p1 -- /bin/true" \
	"$d/bin/withlock --lock-dir $d/ld --paths $d/p2 -- /bin/true"
