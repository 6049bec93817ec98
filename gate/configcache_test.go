package gate

import (
	"encoding"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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

// A cache entry's types cannot change shape (a field added, removed,
// renamed, retyped or re-tagged, here or in a type they hold) without
// cacheSchema changing, so no binary reads an entry another wrote for
// another layout: cacheShape is their fingerprint.
func TestCacheSchema(t *testing.T) {
	if got := typeShape(reflect.TypeFor[cacheEntry]()); got != cacheShape {
		t.Fatalf("the cache entry's types changed shape: set cacheShape (configcache.go) to %q", got)
	}
}

// typeShape fingerprints t as encoding/json sees it: exported fields with
// their names, tags and types, recursively; a type with its own JSON or
// text encoding by its name.
func typeShape(t reflect.Type) string {
	h := fnv.New64a()
	writeShape(h, t, map[reflect.Type]bool{})
	return strconv.FormatUint(h.Sum64(), 36)
}

func writeShape(w io.Writer, t reflect.Type, seen map[reflect.Type]bool) {
	marshaler := reflect.TypeFor[json.Marshaler]()
	text := reflect.TypeFor[encoding.TextMarshaler]()
	switch {
	case t.Implements(marshaler) || t.Implements(text) || reflect.PointerTo(t).Implements(marshaler) || reflect.PointerTo(t).Implements(text):
		fmt.Fprintf(w, "encoded(%s)", t)
		return
	case seen[t]:
		fmt.Fprintf(w, "recursive(%s)", t)
		return
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		fmt.Fprintf(w, "%s(", t.Kind())
		writeShape(w, t.Elem(), seen)
		io.WriteString(w, ")")
	case reflect.Array:
		fmt.Fprintf(w, "[%d]", t.Len())
		writeShape(w, t.Elem(), seen)
	case reflect.Map:
		io.WriteString(w, "map[")
		writeShape(w, t.Key(), seen)
		io.WriteString(w, "]")
		writeShape(w, t.Elem(), seen)
	case reflect.Struct:
		io.WriteString(w, "struct{")
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			fmt.Fprintf(w, "%s %v %q ", f.Name, f.Anonymous, f.Tag)
			writeShape(w, f.Type, seen)
			io.WriteString(w, ";")
		}
		io.WriteString(w, "}")
	case reflect.Interface:
		fmt.Fprintf(w, "interface(%s)", t)
	default:
		io.WriteString(w, t.Kind().String())
	}
}

// The fingerprint sees every change that matters to an entry.
func TestTypeShape(t *testing.T) {
	type inner struct{ A int }
	type innerRenamed struct{ B int }
	type innerRetyped struct{ A string }
	type outer struct {
		X int `json:"x"`
		I *inner
	}
	base := typeShape(reflect.TypeFor[outer]())
	for name, typ := range map[string]reflect.Type{
		"tag": reflect.TypeFor[struct {
			X int `json:"y"`
			I *inner
		}](),
		"field renamed": reflect.TypeFor[struct {
			Y int `json:"x"`
			I *inner
		}](),
		"field added": reflect.TypeFor[struct {
			X int `json:"x"`
			I *inner
			Z bool
		}](),
		"inner renamed": reflect.TypeFor[struct {
			X int `json:"x"`
			I *innerRenamed
		}](),
		"inner retyped": reflect.TypeFor[struct {
			X int `json:"x"`
			I *innerRetyped
		}](),
		"not a pointer": reflect.TypeFor[struct {
			X int `json:"x"`
			I inner
		}](),
	} {
		if typeShape(typ) == base {
			t.Errorf("%s: same fingerprint", name)
		}
	}
	// Names of types and unexported fields do not matter to JSON.
	type same struct {
		X int `json:"x"`
		I *struct{ A int }
		y int
	}
	_ = same{}.y
	if typeShape(reflect.TypeFor[same]()) != base {
		t.Error("an unexported field or a type's name changed the fingerprint")
	}
}

// A cache entry is read within 1 MiB (docs/security.md): an entry padded
// to exactly 1 MiB is still used, one byte more is a miss.
func TestCacheEntryBounded(t *testing.T) {
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
	_, miss, err := LookupGate(path, false, "g")
	if miss == nil || err != nil {
		t.Fatalf("first lookup: %v %v", miss, err)
	}
	full := DefaultConfig()
	full.Path, full.Gates["g"] = path, &GateConfig{Name: "g", Paused: true}
	miss.Store(full)
	ents, _ := os.ReadDir(cache)
	if len(ents) != 1 {
		t.Fatalf("cache holds %d entries", len(ents))
	}
	f := filepath.Join(cache, ents[0].Name())
	b, _ := os.ReadFile(f)
	for _, c := range []struct {
		size int
		hit  bool
	}{{1 << 20, true}, {1<<20 + 1, false}} {
		padded := append(append([]byte{}, b...), strings.Repeat(" ", c.size-len(b))...)
		if err := os.WriteFile(f, padded, 0o600); err != nil {
			t.Fatal(err)
		}
		if cfg, _, _ := LookupGate(path, false, "g"); (cfg != nil) != c.hit {
			t.Errorf("an entry of %d bytes: hit %v, want %v", c.size, cfg != nil, c.hit)
		}
	}
}
