#!/usr/bin/env bash
# The full tier (docs/tests.md): `go test ./...` alone is the fast tier;
# this runs every test: gofmt, go vet, the unit, end-to-end, interop, stress,
# fault and hostile-input tests under the race detector, the etcd backend's
# suite against a real 3-member cluster (.ci/etcd.sh), the packages, their
# install and the ARM builds under emulation (.ci/pkg.sh), and a short run
# of every fuzz target (.ci/fuzz.sh); tests/realcron and the packages
# (at low priority) beside the race tier, the fuzzing (at low priority)
# beside the etcd suite.
#
#   bash tests/all.sh            # the README's test command
#
# It installs nothing: it says what is missing and how to install it
# (`.ci/run` is the only script that installs, and only under CI).
#
# Environment: FUZZTIME (per fuzz target, default 5s; 0 skips fuzzing),
# STRESS_SECONDS (default 15), MUTANTS=1 (then, last, the mutation check:
# go run ./tests/mutants, too long for CI; see RELIABILITY.md). With CI
# set, a missing tool or any skipped test or subtest (every testscript
# `skip` is one) fails the run: every test is required there (python3,
# setpriv and root for the second-user tests, chromium for the browser
# tests, etcd for the etcd suite). It ends with the list of the stages
# it ran, skipped and failed, and, after a failure, those it never
# reached.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin

# What the suite runs with, and the Debian package of each. go, gcc
# (the race detector needs cgo) and python3 (the summary below) are needed
# to run at all; without the others their tests skip, except under CI.
missing_hard=() missing_soft=() pkgs=()
need() { # need HARD|SOFT PROGRAM PACKAGE
	if [ "${2#/}" != "$2" ]; then [ -x "$2" ] && return; else command -v "$2" >/dev/null && return; fi
	if [ "$1" = HARD ]; then missing_hard+=("$2"); else missing_soft+=("$2"); fi
	case " ${pkgs[*]-} " in *" $3 "*) ;; *) pkgs+=("$3") ;; esac
}
need HARD go golang-go
need HARD gcc gcc
need HARD python3 python3
need SOFT flock util-linux
need SOFT setpriv util-linux
need SOFT /usr/bin/chromium chromium
need SOFT etcd etcd-server
need SOFT etcdctl etcd-client
need SOFT /usr/sbin/cron cron
need SOFT crontab cron
need SOFT unshare util-linux
need SOFT promtool prometheus
need SOFT prometheus-node-exporter prometheus-node-exporter
need SOFT systemd-analyze systemd
# The generated man pages and completions (internal/clidoc); the package
# tools are .ci/pkg.sh's, which checks them itself.
need SOFT mandoc mandoc
need SOFT groff groff-base
need SOFT zsh zsh
need SOFT fish fish
if [ ${#pkgs[@]} -gt 0 ]; then
	echo "missing: $(echo ${missing_hard[*]-} ${missing_soft[*]-})"
	echo "hint: install them with: apt-get install -y ${pkgs[*]} (or run .ci/run, which installs what CI needs)"
	if [ ${#missing_hard[@]} -gt 0 ]; then
		echo "tests/all.sh cannot run without ${missing_hard[*]}"
		exit 1
	fi
	if [ -n "${CI:-}" ]; then
		echo "CI: every test is required here; a missing tool fails the run"
		exit 1
	fi
	echo "the tests that need ${missing_soft[*]} will be skipped (listed below)"
fi

# The full tier: the tests that testbin.Full skips in `go test ./...`
# (stress, fault, the browser, Debian's cron, systemd, ...) run here.
export CRONGATE_TESTS=full

# The stages, in order, and what became of each: the list is printed at
# the end whatever happens (EXIT trap), so a failure says which stages
# never ran. stage NAME TITLE starts one in the foreground (the header
# carries the seconds since the start: CI has a time budget,
# docs/tests.md); skip NAME WHY passes one over; done_stage NAME ends one
# that ran. bg_stage NAME TITLE low|normal CMD... starts one beside the
# others, in a process group of its own (for the trap); low is the lowest
# CPU and I/O priority (nice 19, ionice idle), so that what runs in the
# foreground is never starved by it. bg_wait NAME waits for it and prints
# its output.
stages=(gofmt vet realcron test etcd pkg fuzz mutants)
declare -A outcome=() bgpid=() bglog=()
current=
t0=$(date +%s)
stage() {
	[ -z "$current" ] || outcome[$current]=ran
	current=$1
	shift
	echo "== [$(($(date +%s) - t0))s] $*"
}
skip() { outcome[$1]="skipped ($2)"; }
done_stage() {
	outcome[$1]=ran
	[ "$current" != "$1" ] || current=
}
bg_stage() {
	local name=$1 title=$2 prio=()
	# setsid makes a session, and with the kernel's autogroup scheduling
	# (sched_autogroup_enabled) a session is a CPU group of its own that
	# gets an even share against the foreground's, whatever its
	# processes' nice: the group's own nice is set too (raising it needs
	# no privilege).
	[ "$3" = normal ] || prio=(bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 ionice -c 3 "$@"' sh)
	shift 3
	echo "== [$(($(date +%s) - t0))s] $title (beside what follows; its output comes at its end)"
	bglog[$name]=$(mktemp)
	setsid "${prio[@]}" "$@" >"${bglog[$name]}" 2>&1 &
	bgpid[$name]=$!
}
bg_wait() {
	local name=$1 rc=0
	wait "${bgpid[$name]}" || rc=$?
	unset "bgpid[$name]"
	echo "== [$(($(date +%s) - t0))s] $name: its output"
	cat "${bglog[$name]}"
	if [ "$rc" != 0 ]; then
		outcome[$name]="failed (exit $rc)"
		echo "the $name stage failed (exit $rc)"
		exit 1
	fi
	outcome[$name]=ran
}
ledger() {
	local rc=$1 name ran=() skipped=() failed=() never=()
	# The stage under way when the script exits non-zero failed; one
	# still going beside it is stopped.
	if [ "$rc" != 0 ]; then
		[ -z "$current" ] || outcome[$current]=failed
		for name in "${!bgpid[@]}"; do outcome[$name]=stopped; done
	elif [ -n "$current" ]; then
		outcome[$current]=ran
	fi
	for name in "${stages[@]}"; do
		case "${outcome[$name]:-}" in
		ran) ran+=("$name") ;;
		skipped*) skipped+=("$name ${outcome[$name]#skipped }") ;;
		failed*) failed+=("$name${outcome[$name]#failed}") ;;
		stopped) never+=("$name (stopped unfinished)") ;;
		*) never+=("$name") ;;
		esac
	done
	join() { local IFS=,; echo "${*:-none}" | sed 's/,/, /g'; }
	echo "== stages ($(($(date +%s) - t0))s)"
	echo "ran:       $(join "${ran[@]}")"
	echo "skipped:   $(join "${skipped[@]}")"
	echo "failed:    $(join "${failed[@]}")"
	[ "$rc" = 0 ] || echo "never ran: $(join "${never[@]}")"
}

log=$(mktemp)
summary=$(mktemp --suffix .py)
cleanup() {
	local rc=$? name
	for name in "${!bgpid[@]}"; do kill -- -"${bgpid[$name]}" 2>/dev/null || true; done
	rm -f "$log" "$summary" "${bglog[@]}"
	ledger "$rc"
	exit "$rc"
}
trap cleanup EXIT

# summary LOG: the summary of a `go test -json` event stream: every test
# and subtest that passed, failed or was skipped; the output of every
# failing one (subtests included: a testscript's failure is in its
# subtest's output) and of a package that failed outside any test (build
# error, panic, timeout). Fails on a failure, and under CI on a skip.
cat >"$summary" <<'EOF'
import json, os, sys
result, output, pkgout, pkgfail, elapsed = {}, {}, {}, [], {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        ev = json.loads(line)
    except ValueError:
        print(line, end="")
        continue
    pkg, test, act = ev.get("Package") or ev.get("ImportPath"), ev.get("Test"), ev.get("Action")
    if act == "build-output":
        print(ev.get("Output", ""), end="")
        continue
    if act == "output":
        (output.setdefault((pkg, test), []) if test else pkgout.setdefault(pkg, [])).append(ev.get("Output", ""))
    elif act in ("pass", "fail", "skip"):
        if test:
            result[(pkg, test)] = act
        else:
            elapsed[pkg] = ev.get("Elapsed") or 0
            if act == "fail":
                pkgfail.append(pkg)

def own(key):
    return [l for l in output.get(key, []) if not l.lstrip().startswith(("=== RUN", "=== PAUSE", "=== CONT", "=== NAME"))]

def children(key):
    return [k for k in result if k[0] == key[0] and k[1].startswith(key[1] + "/")]

failed = [k for k, a in result.items() if a == "fail"]
skipped = sorted(k for k, a in result.items() if a == "skip")
for key in sorted(failed):
    lines = own(key)
    # A parent whose failure is only its failing subtests' is not repeated.
    if any(result[c] == "fail" for c in children(key)) and all(l.lstrip().startswith("--- ") for l in lines):
        continue
    print("--- FAIL: %s %s" % key)
    print("".join(lines[-120:]))
for pkg in pkgfail:
    if not any(k[0] == pkg for k in failed):
        print("--- FAIL: package %s (outside any test)" % pkg)
        print("".join(l for l in pkgout.get(pkg, [])[-80:] if not l.startswith(("ok ", "PASS"))))
for key in skipped:
    reason = [l.strip() for l in own(key) if l.strip() and not l.lstrip().startswith("--- SKIP")]
    print("--- SKIP: %s %s: %s" % (key[0], key[1], reason[-1] if reason else "(no reason given)"))
for key, lines in output.items():
    for l in lines:
        if "critical sections checked" in l or "BENCH" in l or "Debian's cron ran" in l or "promtool check metrics:" in l or "no duplicate" in l:
            print(key[1] + ": " + l.strip())
slow = sorted(elapsed.items(), key=lambda kv: -kv[1])[:6]
if slow:
    print("slowest packages (s): " + ", ".join("%s %.0f" % (p.replace("github.com/crongate/crongate/", "") or ".", e) for p, e in slow))
top = [k for k in result if "/" not in k[1]]
count = lambda keys, a: sum(1 for k in keys if result[k] == a)
print("tests: %d passed, %d failed, %d skipped; with subtests: %d passed, %d failed, %d skipped" % (
    count(top, "pass"), count(top, "fail"), count(top, "skip"),
    count(result, "pass"), count(result, "fail"), count(result, "skip")))
if failed or pkgfail:
    sys.exit(1)
if skipped and os.environ.get("CI"):
    print("CI: every test and subtest is required here; a skipped one fails the run")
    sys.exit(1)
EOF

stage gofmt "gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then
	echo "gofmt would change:"; echo "$bad"; exit 1
fi
stage vet "go vet"
go vet ./...
done_stage vet

# Debian's cron ticks once a minute: tests/realcron waits through four
# minutes of ticks, nearly idle, so it goes beside the race tier instead
# of holding one of its two package slots; at normal priority, as its
# jobs must run within their minute. The package stage (ARM builds under
# emulation, the .deb in a mount namespace: CPU-bound, with idle stretches
# of its own) starts now too, at the lowest priority, so that it fills
# the race tier's idle stretches and then the etcd suite's.
bg_stage realcron "real cron (tests/realcron under go test -race)" normal \
	bash -c 'status=0; go test -race -count=1 -timeout 15m -json ./tests/realcron >"$1.json" || status=$?; python3 "$2" "$1.json" || status=1; rm -f "$1.json"; exit $status' sh "$log.realcron" "$summary"

bg_stage pkg "packages, install, ARM under emulation (tests/pkg: .ci/pkg.sh)" low bash .ci/pkg.sh

stage test "go test -race (the full tier: CRONGATE_TESTS=full; tests/realcron and the packages beside it)"
status=0
go test -race -count=1 -timeout 15m -json $(go list ./... | grep -v '/tests/realcron$') >"$log" || status=$?
python3 "$summary" "$log" || status=1
[ "$status" -eq 0 ] || { echo "go test failed"; exit 1; }
done_stage test
bg_wait realcron

# The fuzzing is CPU-bound; the etcd suite mostly waits on leases and
# elections, and a starved cluster makes its timing flaky. So the
# fuzzing, like the package stage still going, runs beside it at the
# lowest priority: the suite takes the CPU whenever it wants it, they
# take the rest.
fuzztime=${FUZZTIME:-5s}
if [ "$fuzztime" = 0 ]; then
	skip fuzz "FUZZTIME=0"
else
	bg_stage fuzz "fuzz ($fuzztime per target: .ci/fuzz.sh)" low bash .ci/fuzz.sh "$fuzztime"
fi

if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
	stage etcd "etcd backend (tests/etcd: .ci/etcd.sh; the fuzzing and the packages beside it, at low priority)"
	bash .ci/etcd.sh
	done_stage etcd
else
	echo "--- SKIP: the etcd suite: etcd is not installed (apt-get install -y etcd-server etcd-client)"
	skip etcd "etcd is not installed"
fi

[ "$fuzztime" = 0 ] || bg_wait fuzz
bg_wait pkg
if [ -n "${MUTANTS:-}" ]; then
	stage mutants "mutation check (go run ./tests/mutants)"
	go run ./tests/mutants
	done_stage mutants
else
	skip mutants "MUTANTS unset"
fi
echo "all tests passed in $(($(date +%s) - t0))s"
