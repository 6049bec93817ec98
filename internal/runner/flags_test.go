package runner

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzKongName: the allocation-free name for an ASCII field is kong's
// rule (kongWords, kong's camelCase) joined by "-"; and a tag FastParse
// reads in one pass reads as reflect does.
func FuzzKongName(f *testing.F) {
	for _, s := range []string{"KillAfter", "CAFile", "TTL", "X2Y", "JSON", "OncePer", "HTTPServer2Go", "a", "ABc", "A_b"} {
		f.Add(s, `name:"x" help:"a \"quoted\" b" default:"${v}"`)
	}
	f.Fuzz(func(t *testing.T, s, tag string) {
		if want := strings.ToLower(strings.Join(kongWords(s), "-")); kongName(s) != want {
			t.Fatalf("kongName(%q) = %q, kong's rule %q", s, kongName(s), want)
		}
		st := reflect.StructTag(tag)
		got := readTag(st)
		for k, v := range map[string]string{"name": got.name, "short": got.short, "env": got.env, "sep": got.sep} {
			if w, ok := st.Lookup(k); ok && !got.unread && w != v && strings.Count(tag, k+":") == 1 {
				t.Fatalf("%q: %s read %q, reflect %q", tag, k, v, w)
			}
		}
	})
}
