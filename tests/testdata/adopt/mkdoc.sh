#!/bin/sh
# Writes docs/adopt.md by running the real cron-gate adopt on this
# directory's crontabs: bash tests/testdata/adopt/mkdoc.sh (from the
# module's root; it builds cron-gate into a temporary directory).
set -eu
root=$(pwd)
tmp=$(mktemp -d /tmp/adoptdoc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/cron-gate" ./cmd/cron-gate
cp tests/testdata/adopt/*.crontab tests/testdata/adopt/*.cron.d "$tmp/"
cd "$tmp"
: > config.toml
export CRON_GATE_CONFIG=/tmp/adopt/config.toml CRON_GATE_STATE_DIR="$tmp/state" CRON_GATE_CACHE_DIR="$tmp/cache" PATH="$tmp/bin:$PATH"
# The config is named /tmp/adopt/config.toml in the text, whatever $tmp is.
[ -e /tmp/adopt ] && { echo "/tmp/adopt exists; remove it first" >&2; exit 1; }
ln -s "$tmp" /tmp/adopt
trap 'rm -rf "$tmp" /tmp/adopt' EXIT
{
echo '# cron-gate adopt on three crontabs'
echo
echo 'What `cron-gate adopt` prints for three example crontabs, run on the'
echo 'copies in `tests/testdata/adopt/` with `CRON_GATE_CONFIG=/tmp/adopt/config.toml`'
echo '(an empty config), by `tests/testdata/adopt/mkdoc.sh`. `TestAdoptExamples`'
echo "runs the same commands and checks that Debian's \`crontab -n\` accepts"
echo 'every result. The rules are in [cron-gate.md](cron-gate.md#adopting-a-crontab).'
for ex in "debian.crontab|Debian's example crontab (crontab(5))|" "operator.crontab|An operator's crontab|" "blog.cron.d|A system crontab with a user field (as in /etc/cron.d)| --system"; do
	f=${ex%%|*}; rest=${ex#*|}; title=${rest%%|*}; flag=${rest#*|}
	echo; echo "## $title"; echo
	echo '```'; cat "$f"; echo '```'; echo
	echo "\`cron-gate adopt --file $f$flag --declare\`: the diff on stdout, then stderr:"; echo
	echo '```diff'; cron-gate adopt --file "$f"$flag --declare 2>err; echo '```'; echo
	echo '```'; cat err; echo '```'; echo
	cron-gate adopt --file "$f"$flag --apply >/dev/null 2>&1
	code=0; cron-gate adopt --file "$f"$flag >out 2>/dev/null || code=$?
	echo "After \`--apply\`, a second \`cron-gate adopt --file $f$flag\` exits $code with $(wc -c <out) bytes on stdout: no diff (the lines left alone are listed on stderr again)."
done
} > "$root/docs/adopt.md"
