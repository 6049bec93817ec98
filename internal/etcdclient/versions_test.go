//go:build linux

package etcdclient

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var (
	epsABC = []string{"http://a:2379", "http://b:2379", "http://c:2379"}
	three  = []member{{1, "3.4.23"}, {2, "3.6.1"}, {3, "3.5.13"}}
)

// TestVersionCache: an entry serves the same endpoints in any order, the
// same cluster, with the member just asked among them, for VersionsMaxAge;
// the member asked just now is reported as it answered.
func TestVersionCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	data, err := addVersions(nil, epsABC, 42, three, now)
	if err != nil {
		t.Fatal(err)
	}
	got := lookupVersions(data, []string{"http://c:2379", "http://a:2379", "http://b:2379"}, 42, member{2, "3.6.2"}, now.Add(time.Minute))
	want := []member{{1, "3.4.23"}, {2, "3.6.2"}, {3, "3.5.13"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, c := range []struct {
		what    string
		eps     []string
		cluster uint64
		live    member
		at      time.Time
	}{
		{"other endpoints", epsABC[:2], 42, member{2, "x"}, now},
		{"other cluster", epsABC, 43, member{2, "x"}, now},
		{"member not in the entry", epsABC, 42, member{9, "x"}, now},
		{"too old", epsABC, 42, member{2, "x"}, now.Add(VersionsMaxAge + time.Second)},
		{"from the future", epsABC, 42, member{2, "x"}, now.Add(-time.Second)},
	} {
		if got := lookupVersions(data, c.eps, c.cluster, c.live, c.at); got != nil {
			t.Errorf("%s: got %v, want no answer from the cache", c.what, got)
		}
	}
	for _, bad := range []string{"", "null", "[]", `{"x":1}`, "{", `{"http://a:2379,http://b:2379,http://c:2379":{"members":"x"}}`} {
		if got := lookupVersions([]byte(bad), epsABC, 42, member{2, "x"}, now); got != nil {
			t.Errorf("%q: got %v", bad, got)
		}
	}
}

// TestVersionCacheBounded: at most maxEntries lists of endpoints, the
// oldest dropped.
func TestVersionCacheBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	vc := versionCache{}
	for i := range maxEntries + 5 {
		eps := []string{"http://h" + string(rune('a'+i)) + ":2379"}
		if _, err := addVersions(vc, eps, 1, three[:1], now.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if len(vc) != maxEntries {
		t.Fatalf("%d entries, want %d", len(vc), maxEntries)
	}
	if _, ok := vc["http://ha:2379"]; ok {
		t.Error("the oldest entry was kept")
	}
}

// TestVersionCacheFile: storeVersions writes the user's cache file, mode
// 0600 in a 0700 dir, and cachedVersions reads it back; a cache dir that
// is not private is not used, a symlink in the file's place not
// followed.
func TestVersionCacheFile(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", base)
	now := time.Now()
	storeVersions(epsABC, 42, three, now)
	st, err := os.Stat(filepath.Join(base, "withlock", cacheName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v", st.Mode())
	}
	if st, _ := os.Stat(filepath.Join(base, "withlock")); st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v", st.Mode())
	}
	if got := cachedVersions(epsABC, 42, member{1, "3.4.23"}, now); !slices.Equal(got, three) {
		t.Fatalf("read back %v", got)
	}
	// A cache dir others can read or write: not used.
	os.Chmod(filepath.Join(base, "withlock"), 0o770)
	if got := cachedVersions(epsABC, 42, member{1, "3.4.23"}, now); got != nil {
		t.Errorf("read from a group-writable cache dir: %v", got)
	}
	os.Chmod(filepath.Join(base, "withlock"), 0o700)
	// A symlink to a file that looks like a cache: not read.
	elsewhere := filepath.Join(t.TempDir(), "cache.json")
	data, _ := os.ReadFile(filepath.Join(base, "withlock", cacheName))
	os.WriteFile(elsewhere, data, 0o600)
	os.Remove(filepath.Join(base, "withlock", cacheName))
	if err := os.Symlink(elsewhere, filepath.Join(base, "withlock", cacheName)); err != nil {
		t.Fatal(err)
	}
	if got := cachedVersions(epsABC, 42, member{1, "3.4.23"}, now); got != nil {
		t.Errorf("followed a symlink: %v", got)
	}
}

// FuzzVersionCache: any content of the cache file gives an answer or
// none, never a panic; an answer always holds the member asked, as it
// answered.
func FuzzVersionCache(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	data, _ := addVersions(nil, epsABC, 42, three, now)
	f.Add(data)
	f.Add([]byte(`{"http://a:2379,http://b:2379,http://c:2379":{"at":1800000000,"cluster":42,"members":[{"id":2},{"id":2,"version":"\u202e"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := lookupVersions(data, epsABC, 42, member{2, "3.6.2"}, now)
		if got != nil && !slices.Contains(got, member{2, "3.6.2"}) {
			t.Fatalf("an answer without the member asked: %v", got)
		}
	})
}
