#!/usr/bin/env bash
# The demo (README, "The demo and the tests"): an example blog's three workers -
# translation, term extraction, dependency classifier - play the same
# crontab three ways, with real processes and real locks:
#   (a) no locks, (b) the old whole-worker locks (flock -n), (c) cron-gate + withlock;
# then a checker reads every file and reports lost writes and wasted ticks.
#
#   bash examples/run.sh                     # 12 simulated hours, ~30 s
#   bash examples/run.sh --hours 24          # any run.py flag passes through
#   KEEP=1 bash examples/run.sh              # keep the temp dir (crontabs, logs, files)
#
# Needs Go (builds withlock and cron-gate into a temp dir), python3 and
# flock(1) (util-linux). Everything - lock dir, state dir, slot files - lives
# in the temp dir, which is removed afterwards. Exit status: 0 when the
# unlocked run lost writes, both locking schemes lost none, and cron-gate +
# withlock wasted fewer ticks than the old locks; 1 otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
for c in go python3 flock; do
	command -v "$c" >/dev/null || { echo "run.sh: $c is not installed" >&2; exit 2; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/crongate-demo.XXXXXX")
if [ -n "${KEEP:-}" ]; then
	trap 'echo "kept $tmp"' EXIT
else
	trap 'rm -rf "$tmp"' EXIT
fi
mkdir "$tmp/bin"
echo "building withlock and cron-gate (CGO_ENABLED=0) into $tmp/bin"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/bin/" ./cmd/withlock ./cmd/cron-gate)
python3 "$root/examples/blog-workers/run.py" --bin "$tmp/bin" --workdir "$tmp/work" "$@"
