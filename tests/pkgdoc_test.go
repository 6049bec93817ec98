package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/testbin"
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

// TestHouseSizes: no Go file of the product or its tools is over 800
// lines, and a function over 100 lines says why at its top, in a comment
// starting "Long:" as the first line of its body (issue 34). Test files
// are held to neither: a test reads as its scenario.
func TestHouseSizes(t *testing.T) {
	const maxFile, maxFunc = 800, 100
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
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if n := fset.Position(f.FileEnd).Line; n > maxFile {
			t.Errorf("%s: %d lines, over %d: split it by what it does", path, n, maxFile)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos()).Line
			n := fset.Position(fd.End()).Line - start + 1
			if n <= maxFunc {
				continue
			}
			why := false
			for _, cg := range f.Comments {
				if fset.Position(cg.Pos()).Line == fset.Position(fd.Body.Lbrace).Line+1 {
					why = strings.HasPrefix(cg.List[0].Text, "// Long: ")
					break
				}
			}
			if !why {
				t.Errorf("%s:%d: %s is %d lines, over %d, without a \"// Long: why\" line at its top", path, start, fd.Name.Name, n, maxFunc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPackageCount: at most 30 packages outside tests/ (docs/design.md,
// "The packages"): a helper of one file belongs in the package that uses
// it, not in a package of its own.
func TestPackageCount(t *testing.T) {
	const most = 30
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = testbin.Module()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/crongate/crongate/tests" && !strings.HasPrefix(p, "github.com/crongate/crongate/tests/") {
			pkgs = append(pkgs, p)
		}
	}
	t.Logf("%d packages outside tests/", len(pkgs))
	if len(pkgs) > most {
		t.Errorf("%d packages outside tests/, over %d: fold a small one where it is used\n%s", len(pkgs), most, strings.Join(pkgs, "\n"))
	}
}
