package withlock

import (
	"os"
	"testing"
)

// The lock dir is --lock-dir, else $WITHLOCK_LOCK_DIR, else the Python
// workers' /tmp/blog-file-locks (docs/withlock.md). The literal is written
// here on purpose: changing DefaultLockDir must fail this test. (kong's
// parse is held to FastParse by TestFastParseAgreesWithKong.)
func TestLockDirDefault(t *testing.T) {
	t.Setenv("WITHLOCK_LOCK_DIR", "")
	os.Unsetenv("WITHLOCK_LOCK_DIR")
	var c CLI
	if !FastParse([]string{"--paths", "a"}, &c) || c.LockDir != "/tmp/blog-file-locks" {
		t.Errorf("no flag, no env: lock dir %q, want /tmp/blog-file-locks", c.LockDir)
	}
	t.Setenv("WITHLOCK_LOCK_DIR", "/srv/env-locks")
	if !FastParse([]string{"--paths", "a"}, &c) || c.LockDir != "/srv/env-locks" {
		t.Errorf("env: lock dir %q, want /srv/env-locks", c.LockDir)
	}
	if !FastParse([]string{"--lock-dir", "/srv/flag-locks", "--paths", "a"}, &c) || c.LockDir != "/srv/flag-locks" {
		t.Errorf("flag and env: lock dir %q, want the flag's /srv/flag-locks", c.LockDir)
	}
}
