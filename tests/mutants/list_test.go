package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMutantsApply runs with the ordinary suite (it reads files, runs
// nothing), so that a refactor that moves the code a mutant aims at fails
// at once, naming the mutant to re-aim, even where the long mutation check
// does not run. It also checks that each mutated file still parses, that
// names are unique and that every mutant names its tests.
func TestMutantsApply(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range Mutants {
		if names[m.Name] {
			t.Errorf("mutant name %s is used twice", m.Name)
		}
		names[m.Name] = true
		if m.Name == "" || m.Breaks == "" || len(m.Edits) == 0 || len(m.Pkgs) == 0 || m.Run == "" {
			t.Errorf("mutant %q: a name, what it breaks, edits, packages and a -run pattern are all required", m.Name)
			continue
		}
		if _, err := regexp.Compile(strings.ReplaceAll(m.Run, "/", "|")); err != nil {
			t.Errorf("mutant %s: -run %q: %v", m.Name, m.Run, err)
		}
		if err := m.check(root); err != nil {
			t.Errorf("%v\n\tthe code moved: re-aim this mutant in tests/mutants/list.go at the code that keeps the promise now: %s", err, m.Breaks)
			continue
		}
		files := map[string][]byte{}
		for _, e := range m.Edits {
			data, ok := files[e.File]
			if !ok {
				if data, err = os.ReadFile(filepath.Join(root, e.File)); err != nil {
					t.Fatal(err)
				}
			}
			out, err := e.applyTo(data)
			if err != nil {
				t.Errorf("mutant %s: %s: after its earlier edits: %v", m.Name, e.File, err)
				break
			}
			files[e.File] = out
		}
		for f, data := range files {
			if strings.HasSuffix(f, ".go") {
				if _, err := parser.ParseFile(token.NewFileSet(), f, data, parser.SkipObjectResolution); err != nil {
					t.Errorf("mutant %s: the mutated %s does not parse: %v", m.Name, f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("mutant %s: %v", m.Name, err)
			}
		}
	}
}
