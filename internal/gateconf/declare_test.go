//go:build linux

package gateconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeclareGates: new tables go at the end, every byte before them is
// kept (comments, CRLF line endings), a declared gate is not added twice,
// and the file keeps its mode.
func TestDeclareGates(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.toml")
		orig := strings.ReplaceAll("# my config\n[gates.old] # kept\ninterval = \"1h\"\n", "\n", eol)
		os.WriteFile(path, []byte(orig), 0o640)
		decls := []Declaration{{"old", time.Minute}, {"job", 5 * time.Minute}, {"boot", 0}}
		added, err := DeclareGates(path, decls, filepath.Join(dir, ".config.lock"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(added, ",") != "job,boot" {
			t.Errorf("added %q, want job,boot", added)
		}
		got, _ := os.ReadFile(path)
		want := orig + strings.ReplaceAll("\n[gates.job]\ninterval = \"5m\"\n\n[gates.boot]\n", "\n", eol)
		if string(got) != want {
			t.Errorf("config is\n%q\nwant\n%q", got, want)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
			t.Errorf("mode %v, want 0640", fi.Mode().Perm())
		}
		if again, err := DeclareGates(path, decls, filepath.Join(dir, ".config.lock")); err != nil || len(again) != 0 {
			t.Errorf("second declaration: %q, %v", again, err)
		}
	}
}

// TestDeclareGatesRefuses: a config whose gates are an inline table is
// not edited (the re-parse fails), and nothing is written.
func TestDeclareGatesRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	orig := "gates = { x = { interval = \"1h\" } }\n"
	os.WriteFile(path, []byte(orig), 0o644)
	if _, err := DeclareGates(path, []Declaration{{"job", time.Minute}}, filepath.Join(dir, ".config.lock")); err == nil {
		t.Error("declared into an inline gates table")
	}
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Errorf("config changed to %q", got)
	}
}
