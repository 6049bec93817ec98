package gateconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
)

func TestLoadGateCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("CRON_GATE_CACHE_DIR", cache)
	cfgPath := filepath.Join(t.TempDir(), "c.toml")
	write := func(s string) {
		if err := os.WriteFile(cfgPath, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("state_dir = \"/s\"\n[gates.a]\npaused = true\nreason = \"r\"\n[gates.b]\ninterval = \"5m\"\n")
	for i := 0; i < 2; i++ { // a miss, then a hit
		c, err := LoadGate(cfgPath, false, "a")
		if err != nil {
			t.Fatal(err)
		}
		if g := c.Gate("a"); !g.Paused || g.Reason != "r" || c.StateDir != "/s" || len(c.Gates) != 1 {
			t.Fatalf("round %d: %+v %+v", i, c, g)
		}
	}
	ents, _ := os.ReadDir(cache)
	if len(ents) != 1 {
		t.Fatalf("cache entries: %d", len(ents))
	}
	st, _ := os.Stat(cache)
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v", st.Mode())
	}
	// Any change to the file is a miss: the pause is lifted at once.
	write("state_dir = \"/s\"\n[gates.a]\npaused = false\nreason = \"r\"\n[gates.b]\ninterval = \"5m\"\n")
	if c, err := LoadGate(cfgPath, false, "a"); err != nil || c.Gate("a").Paused {
		t.Fatalf("stale cache: %+v %v", c, err)
	}
	// An invalid config is refused every time, never cached.
	write("[gates.a]\npausd = true\n")
	for i := 0; i < 2; i++ {
		if _, err := LoadGate(cfgPath, false, "a"); err == nil || !strings.Contains(err.Error(), "pausd") {
			t.Fatalf("invalid config accepted: %v", err)
		}
	}
	// A tampered entry (wrong key inside) is ignored.
	write("[gates.a]\npaused = true\n")
	LoadGate(cfgPath, false, "a")
	ents, _ = os.ReadDir(cache)
	for _, e := range ents {
		os.WriteFile(filepath.Join(cache, e.Name()), []byte(`{"key":"x","gate":{"Name":"a","Paused":false}}`), 0o600)
	}
	if c, _ := LoadGate(cfgPath, false, "a"); !c.Gate("a").Paused {
		t.Fatal("tampered cache entry was used")
	}
}

func TestCacheDirMustBePrivate(t *testing.T) {
	d := filepath.Join(t.TempDir(), "c")
	os.Mkdir(d, 0o777)
	os.Chmod(d, 0o777)
	t.Setenv("CRON_GATE_CACHE_DIR", d)
	if gate.CacheDir() != "" {
		t.Fatal("a world-writable cache dir was used")
	}
	link := filepath.Join(t.TempDir(), "l")
	os.Symlink(t.TempDir(), link)
	t.Setenv("CRON_GATE_CACHE_DIR", link)
	if gate.CacheDir() != "" {
		t.Fatal("a symlinked cache dir was used")
	}
	t.Setenv("CRON_GATE_CACHE_DIR", "off")
	if gate.CacheDir() != "" {
		t.Fatal("cache not off")
	}
}
