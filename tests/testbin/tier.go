package testbin

import (
	"os"
	"testing"
)

// The two test tiers (docs/tests.md). `go test ./...` is the fast tier:
// every unit test and every feature's testscript through the real
// binaries, on any Linux machine with Go and python3. The full tier adds
// the tests that are slow or need more of the machine (stress, fault
// injection, the browser, Debian's cron and systemd, long bounds); they
// call Full first. tests/all.sh, the README's test command, sets
// TierEnv=full. The suites that need outside setup keep their build tags
// and scripts: etcd (.ci/etcd.sh) and pkg (.ci/pkg.sh).

// TierEnv is the environment variable that selects the full tier: its
// value "full".
const TierEnv = "CRONGATE_TESTS"

// FullTier reports whether the full tier runs.
func FullTier() bool { return os.Getenv(TierEnv) == "full" }

// Full skips t unless the full tier runs; why says what puts the test
// there (its measured cost, or what of the machine it needs), and is
// printed with the skip.
func Full(t testing.TB, why string) {
	t.Helper()
	if !FullTier() {
		t.Skipf("full tier (%s=full, bash tests/all.sh): %s", TierEnv, why)
	}
}
