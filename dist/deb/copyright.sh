#!/usr/bin/env bash
# Prints the package's copyright file (dist/deb/build.sh): the project's
# notice, then the license of the Go standard library and of every module
# linked into the binaries of BINDIR, as `go version -m` lists them, read
# from the module cache. A module whose license file cannot be found fails
# the build: nothing ships without its license.
#
#   bash dist/deb/copyright.sh BINDIR
set -euo pipefail
bindir=$1
modcache=$(go env GOMODCACHE)
goroot=$(go env GOROOT)

cat <<'EOF2'
cron-gate and withlock

Copyright: the cron-gate and withlock authors.

The source does not state a license yet; until it does, this package
grants no license beyond what its authors have granted you directly.

The binaries are statically linked Go programs: they contain the Go
standard library and the Go modules listed below, each under its own
license, reproduced here (Apache-2.0: see /usr/share/common-licenses/Apache-2.0,
and each such module's NOTICE where it has one).

EOF2

# print_license NAME DIR: the license (and NOTICE) files of DIR.
print_license() {
	local name=$1 dir=$2 f found=
	echo "Module: $name"
	for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE*; do
		[ -f "$f" ] || continue
		found=1
		if grep -q 'Apache License' "$f" && grep -q 'Version 2.0' "$f" && [ "$(wc -l <"$f")" -gt 150 ]; then
			echo "License: Apache-2.0 (/usr/share/common-licenses/Apache-2.0)"
			continue
		fi
		echo "$(basename "$f"):"
		sed 's/^$/./; s/^/ /' "$f"
	done
	echo
	if [ -z "$found" ]; then
		echo "copyright.sh: no license file for $name in $dir" >&2
		return 1
	fi
}

print_license "Go standard library ($(go env GOVERSION))" "$goroot"
# Module paths are stored case-encoded in the cache: an upper-case letter
# becomes "!" and its lower case.
go version -m "$bindir"/* | awk '$1 == "dep" { print $2, $3 }' | sort -u |
	while read -r mod ver; do
		enc=$(printf '%s' "$mod" | sed 's/[A-Z]/!\L&/g')
		print_license "$mod $ver" "$modcache/$enc@$ver"
	done
