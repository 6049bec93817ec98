#!/usr/bin/env bash
# What an operator installs (docs/install.md): tests/pkg (build tag pkg).
# It runs dist/release.sh (the two .debs and the static tarball of amd64, arm64 and
# armhf, the source tarball, SHA256SUMS) and checks the artefacts with
# lintian; installs the amd64 .debs with dpkg -i (as root, in a private
# mount namespace whose /usr, /etc and /var are overlays, so the host is
# neither changed nor read for what it has installed), uses them as cron
# would, removes and purges them; runs the README's install command and crontab lines; and
# runs the libraries' unit tests and a smoke run of withlock and cron-gate
# built for arm64 and armhf under qemu-user. It is kept out of tests/all.sh's
# go test: it builds every architecture, and installs a package.
#
# It installs nothing (.ci/run does, under CI): without a tool it says how
# to install it and the tests that need it skip, except with CI set, where
# a missing tool or any skipped test or subtest fails the run.
#
#   bash .ci/pkg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

missing=() pkgs=()
for t in dpkg-deb:dpkg make:make git:git xz:xz-utils lintian:lintian man:man-db setpriv:util-linux zsh:zsh fish:fish \
	qemu-aarch64-static:qemu-user-static qemu-arm-static:qemu-user-static; do
	command -v "${t%%:*}" >/dev/null && continue
	missing+=("${t%%:*}")
	case " ${pkgs[*]-} " in *" ${t#*:} "*) ;; *) pkgs+=("${t#*:}") ;; esac
done
if [ ! -e /usr/share/bash-completion/bash_completion ]; then
	missing+=(bash_completion)
	pkgs+=(bash-completion)
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "missing: ${missing[*]}"
	echo "hint: install them with: apt-get install -y ${pkgs[*]} (or run .ci/run, which installs what CI needs)"
	if [ -n "${CI:-}" ]; then
		echo "CI: the package tests are required here"
		exit 1
	fi
	echo "the tests that need them will skip"
fi
[ "$(id -u)" = 0 ] || echo "not root: the .deb is built and checked but not installed (TestDebInstall skips)"

echo "== go vet -tags pkg ./tests/pkg/"
go vet -tags pkg ./tests/pkg/

echo "== go test -tags pkg ./tests/pkg/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -tags pkg -count=1 -timeout 40m -v ./tests/pkg/ 2>&1 | tee "$log" | grep --line-buffered -v '^=== ' || status=$?
[ "${PIPESTATUS[0]}" = 0 ] || status=1
passed=$(grep -c '^ *--- PASS' "$log" || true)
failed=$(grep -c '^ *--- FAIL' "$log" || true)
skipped=$(grep -c '^ *--- SKIP' "$log" || true)
echo "pkg: $passed passed, $failed failed, $skipped skipped (subtests included)"
if [ "$status" != 0 ] || [ "$failed" != 0 ]; then
	echo "package tests failed"
	exit 1
fi
if [ "$skipped" != 0 ] && [ -n "${CI:-}" ]; then
	echo "CI: every package test is required here; a skipped test or subtest fails the run"
	exit 1
fi
