package gate

import (
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the README's generated config key tables")

const (
	readmeKeysBegin = "<!-- config keys: generated from gate/keys.go by `go test ./gate -run TestDocsConfigKeys -update`; do not edit -->"
	readmeKeysEnd   = "<!-- end of config keys -->"
)

// readmeKeys renders KeyDocs as the README's key tables, one per table.
func readmeKeys() string {
	var b strings.Builder
	table := "-"
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, k := range KeyDocs() {
		if k.Table != table {
			table = k.Table
			switch table {
			case "":
				b.WriteString("\nTop level:\n")
			default:
				b.WriteString("\n`[" + table + "]`:\n")
			}
			b.WriteString("\n| key | type | default | meaning |\n|---|---|---|---|\n")
		}
		def := k.Note
		if k.Default != "" {
			def = strings.TrimSpace("`" + k.Default + "` " + k.Note)
		}
		b.WriteString("| `" + k.Name + "` | " + cell(k.Type) + " | " + cell(def) + " | " + cell(k.Doc) + " |\n")
	}
	return b.String()
}

// docs/config.md's key tables are the table of keys: every key, its type and
// range, its default and its meaning, written once in keys.go. Run with
// -update after changing a key.
func TestDocsConfigKeys(t *testing.T) {
	const path = "../docs/config.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, readmeKeysBegin), strings.Index(s, readmeKeysEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no block between %q and %q", path, readmeKeysBegin, readmeKeysEnd)
	}
	i += len(readmeKeysBegin)
	want := readmeKeys() + "\n"
	if s[i:j] == want {
		return
	}
	if !*update {
		t.Fatalf("%s: the config key tables differ from gate/keys.go; run go test ./gate -run TestDocsConfigKeys -update\n--- want\n%s", path, want)
	}
	if err := os.WriteFile(path, []byte(s[:i]+want+s[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every key of every table is in the docs, with a line of doc; every
// table's keys are unique.
func TestKeyDocs(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range KeyDocs() {
		id := k.Table + "." + k.Name
		if seen[id] {
			t.Errorf("%s: twice", id)
		}
		seen[id] = true
		if k.Doc == "" || strings.ContainsAny(k.Doc, "\n") {
			t.Errorf("%s: doc %q, want one line", id, k.Doc)
		}
		if k.Type == "" {
			t.Errorf("%s: no type", id)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d keys documented", len(seen))
	}
}

// Every exported field of a table's struct is a key (some key's Set
// changes it), or is listed here as filled otherwise; so a new field
// cannot be added without its table entry.
func TestKeysCoverFields(t *testing.T) {
	notKeys := map[string]bool{
		"Config.Path": true, "Config.Gates": true, "Config.Check": true, "Config.Serve": true,
		"Config.Etcd": true, "Config.Notify": true,
		"GateConfig.Name": true, "GateConfig.PausedLine": true, "CheckConfig.ResumeGraceSet": true,
		"NotifyConfig.Line": true,
	}
	coverTable(t, &TopTable, notKeys)
	coverTable(t, &GateTable, notKeys)
	coverTable(t, &CheckTable, notKeys)
	coverTable(t, &NotifyTable, notKeys)
	coverTable(t, &ServeTable, notKeys)
	coverTable(t, &EtcdTable, notKeys)
}

func coverTable[T any](t *testing.T, tb *Table[T], notKeys map[string]bool) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	covered := map[string]string{}
	for _, k := range tb.Keys {
		if k.Set == nil {
			continue
		}
		var zero, x T
		k.Set(&x, sample(k.Spec))
		for i := 0; i < typ.NumField(); i++ {
			if !reflect.DeepEqual(reflect.ValueOf(zero).Field(i).Interface(), reflect.ValueOf(x).Field(i).Interface()) {
				covered[typ.Field(i).Name] = k.Name
			}
		}
		// Get reads back what Set stored.
		if v, set := k.Get(&x); !set || !reflect.DeepEqual(v, k.readBack(sample(k.Spec))) {
			t.Errorf("%s.%s: Get after Set = %+v, %v; want %+v", typ.Name(), k.Name, v, set, sample(k.Spec))
		}
	}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name := typ.Name() + "." + f.Name
		if f.IsExported() && covered[f.Name] == "" && !notKeys[name] {
			t.Errorf("%s is no key's field: add it to the table of keys (keys.go), or to notKeys here", name)
		}
	}
}

// readBack is v as Get returns it: a duration without its text.
func (s Spec) readBack(v Value) Value {
	if s.Kind == KindDuration {
		v.S = ""
	}
	return v
}

// sample is a value of s's kind that is not the zero value.
func sample(s Spec) Value {
	switch s.Kind {
	case KindBool:
		return Value{B: !s.Default.B} // the value that is not the default

	case KindInt:
		return Value{N: 4097}
	case KindNumber:
		return Value{F: 2}
	case KindDuration:
		return Value{D: time.Minute, S: "1m"}
	case KindPaths, KindURLs, KindArgv:
		return Value{L: []string{"/x"}}
	case KindEnum:
		return Value{S: s.Values[len(s.Values)-1]}
	}
	return Value{S: "/x"}
}

var splitPortCases = []string{
	"", ":", "h", "h:", ":1", "h:1", "127.0.0.1:8371", "[::1]:8371", "[::1]", "::1:80", "[::1]:", "[::1]x:1",
	"[a]:1:2", "a[b]:1", "[a]b]:1", "[a:1", "a]:1", "[[a]]:1", "0.0.0.0:http", "a b:1", "[fe80::1%eth0]:1",
}

// splitPort is net.SplitHostPort without linking net: it must agree with
// it on whether an address splits, and on the port.
func TestSplitPort(t *testing.T) {
	for _, s := range splitPortCases {
		checkSplitPort(t, s)
	}
}

func FuzzSplitPort(f *testing.F) {
	for _, s := range splitPortCases {
		f.Add(s)
	}
	f.Fuzz(checkSplitPort)
}

func checkSplitPort(t *testing.T, s string) {
	_, wantPort, err := net.SplitHostPort(s)
	port, ok := splitPort(s)
	if ok != (err == nil) || ok && port != wantPort {
		t.Errorf("splitPort(%q) = %q, %v; net.SplitHostPort: port %q, error %v", s, port, ok, wantPort, err)
	}
}

// The table of keys lives here rather than in gateconf so that package
// gate, which validates a cached config with it on every cached run,
// stays free of the TOML library and of net: decoding is gateconf's
// (splitPort stands in for net.SplitHostPort).
func TestGateLinksNoTOML(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net" || dep == "net/http" || strings.Contains(dep, "BurntSushi/toml") {
			t.Errorf("package gate depends on %s", dep)
		}
	}
}
