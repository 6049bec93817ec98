package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// exitCodeLiterals are the codes of exitcode.go as they would be written
// by hand.
var exitCodeLiterals = map[string]bool{"70": true, "75": true, "124": true, "125": true, "126": true, "127": true, "128": true}

// notExitCodes are constants whose value happens to be one of the codes.
var notExitCodes = map[string]bool{
	"MaxTxnOps": true, // etcd's default --max-txn-ops (etcdlock)
}

// literalExitCodes lists, as "file:line: what", the places in the non-test
// Go files under root (outside runner and tests) where an exit code is
// written as a number: an argument of os.Exit, a returned value, a
// constant, variable, field or assignment, a comparison or a sum (128+N),
// and a kong default tag. Numbers elsewhere (a size, a shift) are not
// exit codes.
func literalExitCodes(t *testing.T, root string) []string {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == "internal/runner", rel == "tests", d.Name() == "testdata", strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		report := func(n ast.Node, what string) {
			found = append(found, fset.Position(n.Pos()).String()[len(root)+1:]+": "+what)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Exit" {
					for _, a := range n.Args {
						if code(a) {
							report(a, "os.Exit with a literal code")
						}
					}
				}
			case *ast.ReturnStmt:
				for _, r := range n.Results {
					if code(r) {
						report(r, "returns a literal code")
					}
				}
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if code(v) && (i >= len(n.Names) || !notExitCodes[n.Names[i].Name]) {
						report(v, "a constant or variable set to a literal code")
					}
				}
			case *ast.KeyValueExpr:
				if code(n.Value) {
					report(n.Value, "a field set to a literal code")
				}
			case *ast.AssignStmt:
				for _, r := range n.Rhs {
					if code(r) {
						report(r, "assigns a literal code")
					}
				}
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					if code(n.X) || code(n.Y) {
						report(n, "compares with a literal code")
					}
				}
			case *ast.Field:
				if n.Tag != nil {
					tag := reflect.StructTag(strings.Trim(n.Tag.Value, "`"))
					if exitCodeLiterals[tag.Get("default")] {
						report(n.Tag, "a default tag with a literal code")
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// code reports whether e is a literal exit code, alone or in a sum
// (128 + n).
func code(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.INT && exitCodeLiterals[e.Value]
	case *ast.ParenExpr:
		return code(e.X)
	case *ast.BinaryExpr:
		return (e.Op == token.ADD || e.Op == token.SUB) && (code(e.X) || code(e.Y))
	}
	return false
}

// Every exit code is a named constant of this package (exitcode.go): no
// other non-test file writes one as a number (docs/exit-codes.md, "Exit codes").
// CRONGATE_SOURCE names another tree to check (for checking this test
// against an older tree).
func TestNoLiteralExitCodes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if r := os.Getenv("CRONGATE_SOURCE"); r != "" {
		root = r
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module's root: %v", root, err)
	}
	for _, f := range literalExitCodes(t, root) {
		t.Errorf("%s; use runner's constant", f)
	}
}
