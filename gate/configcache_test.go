package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cache entry is used only for its own config path, whatever its key
// says: an entry written for one config never stands in for another.
func TestCacheEntryPathChecked(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRON_GATE_CACHE_DIR", cache)
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, []byte("[gates.g]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, miss, err := LookupGate(path, false, "g")
	if cfg != nil || miss == nil || err != nil {
		t.Fatalf("first lookup: %v %v %v", cfg, miss, err)
	}
	full := DefaultConfig()
	full.Path, full.Gates["g"] = path, &GateConfig{Name: "g", Paused: true}
	miss.Store(full)
	if cfg, _, _ := LookupGate(path, false, "g"); cfg == nil || !cfg.Gate("g").Paused {
		t.Fatalf("second lookup missed: %+v", cfg)
	}
	ents, _ := os.ReadDir(cache)
	if len(ents) != 1 {
		t.Fatalf("cache holds %d entries", len(ents))
	}
	f := filepath.Join(cache, ents[0].Name())
	b, _ := os.ReadFile(f)
	if !strings.Contains(string(b), `"path":"`+path+`"`) {
		t.Fatalf("entry without its path: %s", b)
	}
	os.WriteFile(f, []byte(strings.Replace(string(b), `"path":"`+path+`"`, `"path":"/elsewhere.toml"`, 1)), 0o600)
	if cfg, miss, _ := LookupGate(path, false, "g"); cfg != nil || miss == nil {
		t.Fatalf("an entry for another path was used: %+v", cfg)
	}
}
