#!/usr/bin/env bash
# Release artefacts (docs/install.md, "Release artefacts"): for amd64, arm64
# and armhf the Debian package and a static tarball, the source tarball,
# and SHA256SUMS over all of them.
#
#   bash dist/release.sh [OUTDIR]        # default build/release
#
# OUTDIR/cron-gate_VERSION_ARCH.deb            dist/deb/build.sh (local work)
# OUTDIR/cron-gate-etcd_VERSION_ARCH.deb       dist/deb/build.sh (the etcd backend)
# OUTDIR/cron-gate-VERSION-linux-ARCH.tar.gz   bin/, share/man, the completions, share/doc:
#     sudo tar -C /usr/local --strip-components=1 -xzf cron-gate-VERSION-linux-amd64.tar.gz
# OUTDIR/cron-gate-VERSION.tar.gz              git archive of HEAD (COMMIT filled in, so
#     that `make` in it builds the same --version without git)
# OUTDIR/SHA256SUMS                            check with: sha256sum -c SHA256SUMS
#
# A tree with uncommitted changes is refused (the source tarball is HEAD's
# and would not match the binaries) unless ALLOW_DIRTY=1. Everything is
# dated from the commit (SOURCE_DATE_EPOCH), so a rebuild of a commit gives
# the same files.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

out=${1:-build/release}
version=$(cat internal/runner/VERSION)
if [ ! -e .git ]; then
	echo "release.sh: run it in a git checkout (the source tarball is git archive's)" >&2
	exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ] && [ "${ALLOW_DIRTY:-}" != 1 ]; then
	echo "release.sh: the tree has uncommitted changes; commit them (or ALLOW_DIRTY=1 for a test build)" >&2
	exit 1
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
rm -rf "$out"
mkdir -p "$out"

# tarball DIR NAME: a reproducible OUTDIR/NAME.tar.gz of DIR's contents
# under NAME/.
tarball() {
	tar -C "$1" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--transform "s|^\\.|$2|" -cf - . | gzip -9n >"$out/$2.tar.gz"
}

for arch in amd64 arm64 armhf; do
	echo "== $arch" >&2
	bash dist/deb/build.sh "$arch" "$out" >/dev/null
	# The binaries and pages the package got, laid out for PREFIX=/usr/local.
	build=build/deb-$arch
	stage=build/tar-$arch
	rm -rf "$stage"
	case $arch in
	amd64) goarch=amd64 goarm= ;;
	arm64) goarch=arm64 goarm= ;;
	armhf) goarch=arm goarm=7 ;;
	esac
	make -s install BUILD="$build" PREFIX=/usr/local DESTDIR="$stage" GOARCH="$goarch" GOARM="$goarm" >/dev/null
	doc=$stage/usr/local/share/doc/cron-gate
	install -d "$doc"
	install -m 0644 README.md docs/*.md "$doc/"
	install -m 0644 dist/config.toml "$doc/config.toml.example"
	install -m 0644 "$build/root/usr/share/doc/cron-gate/copyright" "$doc/copyright"
	find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	tarball "$stage/usr/local" "cron-gate-$version-linux-$arch"
done

git archive --format=tar --prefix="cron-gate-$version/" HEAD | gzip -9n >"$out/cron-gate-$version.tar.gz"
(cd "$out" && sha256sum -- *.deb *.tar.gz >SHA256SUMS)
ls -l "$out" >&2
