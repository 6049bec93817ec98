#!/usr/bin/env bash
# Builds the Debian packages of withlock and cron-gate for one architecture
# with dpkg-deb (docs/install.md, "The Debian packages"):
#
#   bash dist/deb/build.sh amd64|arm64|armhf [OUTDIR]     # default OUTDIR: build/
#
# It writes OUTDIR/cron-gate_VERSION_ARCH.deb and
# OUTDIR/cron-gate-etcd_VERSION_ARCH.deb and prints their paths, one a
# line. cron-gate is everything local: withlock and cron-gate, one file
# each. cron-gate-etcd adds the etcd backend's two binaries
# (withlock-etcd, cron-gate-etcd, which link etcd's client and are most of
# the size), their man page links, its copyright and changelog, and
# depends on cron-gate of the same version. The base
# package holds the static binaries in /usr/bin, the man pages and
# completions generated from the code (make install PREFIX=/usr), the
# example /etc/cron-gate/config.toml (a conffile), every file of
# dist/systemd/ in /lib/systemd/system and its subdirectories (examples)
# in /usr/share/doc/cron-gate/systemd/ (SYSTEMD_UNITS overrides
# the directory; none there, none in the package),
# the copyright (with the license of every Go module linked in), the
# changelog, the reference (README.md and docs/*.md, compressed, in
# /usr/share/doc/cron-gate), lintian's override for the static binaries,
# and a postrm that removes root's config cache on purge. Needs go, make,
# dpkg-deb; nothing from debhelper.
#
# Reproducible: files, dates and the archive's timestamps come from the
# commit (SOURCE_DATE_EPOCH), owners are root.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

arch=${1:-}
out=${2:-build}
case $arch in
amd64) goarch=amd64 goarm= ;;
arm64) goarch=arm64 goarm= ;;
armhf) goarch=arm goarm=7 ;;
*)
	echo "usage: build.sh amd64|arm64|armhf [OUTDIR]" >&2
	exit 2
	;;
esac
pkg=cron-gate
epkg=cron-gate-etcd
etcdbins="withlock-etcd cron-gate-etcd"
version=$(cat internal/runner/VERSION)
# The changelog's newest entry is this version: dpkg and lintian read it.
top=$(sed -n '1s/^cron-gate (\([^)]*\)).*/\1/p' dist/deb/changelog)
if [ "$top" != "$version" ]; then
	echo "build.sh: dist/deb/changelog's newest entry is $top, internal/runner/VERSION says $version; add an entry" >&2
	exit 1
fi
maintainer=$(sed -n 's/^ -- \(.*>\)  .*/\1/p' dist/deb/changelog | head -1)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	if [ -e .git ]; then
		SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
	else
		SOURCE_DATE_EPOCH=$(date -d "$(sed -n 's/^ -- .*>  //p' dist/deb/changelog | head -1)" +%s)
	fi
fi
export SOURCE_DATE_EPOCH

build=build/deb-$arch
stage=$build/root
estage=$build/root-etcd
rm -rf "$build"
mkdir -p "$stage/DEBIAN" "$estage/DEBIAN" "$out"
make -s install BUILD="$build" PREFIX=/usr DESTDIR="$stage" GOARCH="$goarch" GOARM="$goarm" >/dev/null

# Man pages compressed (Debian policy 12.1), the companions' links to them.
find "$stage/usr/share/man" -type f -exec gzip -9n {} +
for l in $(find "$stage/usr/share/man" -type l); do
	target=$(readlink "$l")
	rm "$l"
	ln -s "$target.gz" "$l.gz"
done

install -D -m 0644 dist/config.toml "$stage/etc/cron-gate/config.toml"
# Every file of dist/systemd goes to /lib/systemd/system (units, whatever
# their type); its subdirectories (examples/: units of an example blog's
# jobs, not ours to install as system units) go to
# /usr/share/doc/cron-gate/systemd/. Nothing is enabled: no maintainer
# scripts (below).
units=${SYSTEMD_UNITS:-dist/systemd}
if [ -d "$units" ]; then
	find "$units" -mindepth 1 -maxdepth 1 -type f -print0 | while IFS= read -r -d '' u; do
		install -D -m 0644 "$u" "$stage/lib/systemd/system/$(basename "$u")"
	done
	find "$units" -mindepth 2 -type f -printf '%P\0' | while IFS= read -r -d '' u; do
		install -D -m 0644 "$units/$u" "$stage/usr/share/doc/$pkg/systemd/$u"
	done
fi

doc=$stage/usr/share/doc/$pkg
install -d "$doc"
gzip -9n <dist/deb/changelog >"$doc/changelog.gz"
# The reference the man pages point to (docs/*.md, the README), compressed
# as policy 12.3 asks: zless /usr/share/doc/cron-gate/withlock.md.gz.
for f in README.md docs/*.md; do
	gzip -9n <"$f" >"$doc/$(basename "$f").gz"
done
install -D -m 0644 dist/deb/lintian-overrides "$stage/usr/share/lintian/overrides/$pkg"

# The etcd backend's binaries and their man page links move to the
# second package; each package's copyright lists the modules linked into
# its own binaries.
install -d "$estage/usr/bin" "$estage/usr/share/man/man1" "$estage/usr/share/doc/$epkg" "$estage/usr/share/lintian/overrides" "$build/bin-base" "$build/bin-etcd"
for b in $etcdbins; do
	mv "$stage/usr/bin/$b" "$estage/usr/bin/$b"
	mv "$stage/usr/share/man/man1/$b.1.gz" "$estage/usr/share/man/man1/$b.1.gz"
	ln -s "../bin/$b" "$build/bin-etcd/$b"
done
for b in "$stage"/usr/bin/*; do
	ln -s "../bin/$(basename "$b")" "$build/bin-base/$(basename "$b")"
done
bash dist/deb/copyright.sh "$build/bin-base" >"$doc/copyright"
bash dist/deb/copyright.sh "$build/bin-etcd" >"$estage/usr/share/doc/$epkg/copyright"
gzip -9n <dist/deb/changelog >"$estage/usr/share/doc/$epkg/changelog.gz"
sed "s/^$pkg:/$epkg:/" dist/deb/lintian-overrides >"$estage/usr/share/lintian/overrides/$epkg"

# One maintainer script: purge removes root's config cache
# (/var/cache/cron-gate, gate/configcache.go), which only ever holds what
# the config says and is always safe to delete. What runs create that is
# the operator's (journals in the state dir, other users' caches in their
# homes) stays on purge (docs/install.md). Nothing is started or enabled.
echo /etc/cron-gate/config.toml >"$stage/DEBIAN/conffiles"
cat >"$stage/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
	rm -rf /var/cache/cron-gate
fi
EOF
chmod 0755 "$stage/DEBIAN/postrm"

size=$(du -k -s --apparent-size --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Section: admin
Priority: optional
Description: cron job wrappers: per-file locks, pauses and a journal
 withlock runs a command while holding flock locks on the paths it edits
 and a slot from concurrency pools, all or nothing, and skips (exit 75)
 when something is busy; its lock files are those of Python workers that
 lock with sha256(resolved path).lock, so old and new processes exclude
 each other.
 .
 cron-gate runs a cron job's command unless its gate is paused or a legacy
 lock is held, journals every start, success, failure and skip, and has a
 watchdog (cron-gate check) and a dashboard (cron-gate serve). Across hosts,
 locks and pauses can live in an etcd cluster (package cron-gate-etcd).
EOF
esize=$(du -k -s --apparent-size --exclude=DEBIAN "$estage" | cut -f1)
cat >"$estage/DEBIAN/control" <<EOF
Package: $epkg
Source: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $esize
Depends: $pkg (= $version)
Section: admin
Priority: optional
Description: cron-gate and withlock across hosts, on etcd
 withlock-etcd and cron-gate-etcd keep withlock's locks and slots and
 cron-gate's pauses and once-per claims in an etcd cluster, so that jobs
 on several hosts exclude each other. withlock --backend etcd and a
 cron-gate config with an [etcd] table run them; without this package
 those lines fail with exit 125, saying what to install.
EOF
for st in "$stage" "$estage"; do
	(cd "$st" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$st/DEBIAN/md5sums"
	find "$st" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
done
deb=$out/${pkg}_${version}_$arch.deb
edeb=$out/${epkg}_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$estage" "$edeb" >/dev/null
echo "$deb"
echo "$edeb"
