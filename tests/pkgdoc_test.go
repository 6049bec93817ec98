package tests

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every package comment names its own package ("// Package NAME ..."),
// or, for a command, says "Command NAME": a comment naming a package that
// does not exist sends a reader looking for it.
func TestPackageCommentsNameTheirPackage(t *testing.T) {
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc == nil {
			return nil
		}
		text := f.Doc.Text()
		name, ok := strings.CutPrefix(text, "Package ")
		if !ok {
			return nil // "Command withlock ...", or not a package comment's form
		}
		n++
		if got, _, _ := strings.Cut(name, " "); got != f.Name.Name {
			t.Errorf("%s: the package comment names package %q; the package is %q", path, got, f.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d package comments found: the walk is wrong", n)
	}
}
