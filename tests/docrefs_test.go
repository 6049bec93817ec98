package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The docs name the test that proves each claim. TestDocsNameRealTests
// keeps those names true: every Test/Fuzz/Benchmark/Example name the
// README or a page of docs/ mentions is defined in some _test.go file (a
// name followed by `*`, or written inside a -run pattern, may be the
// prefix of one), every testscript it names (`dir/name.txtar`) exists
// under tests/testdata, and every repository path it names in backticks
// (cmd/…, internal/…, tests/…, docs/…, examples/…, dist/…, .ci/…) exists.
// A rename or a move that leaves the docs behind fails here. docs/log.md,
// the dated history, is not checked: it names what was.
func TestDocsNameRealTests(t *testing.T) {
	root := ".."
	docs := []string{filepath.Join(root, "README.md")}
	more, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, m := range more {
		// The measurement log records what was, under its date: the
		// files and tests it names may be gone since.
		if filepath.Base(m) != "log.md" {
			docs = append(docs, m)
		}
	}

	defined := map[string]bool{}
	defRe := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range defRe.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the tests: %v", err)
	}
	if len(defined) < 100 {
		t.Fatalf("found only %d test functions: the walk is wrong", len(defined))
	}
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	sort.Strings(names)
	isPrefix := func(n string) bool {
		i := sort.SearchStrings(names, n)
		return i < len(names) && strings.HasPrefix(names[i], n)
	}

	nameRe := regexp.MustCompile(`\b((?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*)(\*?)`)
	scriptRe := regexp.MustCompile("`((?:[a-z]+/)?[A-Za-z0-9_.-]+\\.txtar)`")
	pathRe := regexp.MustCompile("`((?:cmd|internal|tests|docs|examples|dist|\\.ci)/[A-Za-z0-9_./-]*[A-Za-z0-9_]|[a-z][A-Za-z0-9_.-]*/[A-Za-z0-9_./-]*\\.(?:go|sh|py))`")
	scripts := map[string]bool{}
	filepath.WalkDir(filepath.Join(root, "tests", "testdata"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".txtar") {
			rel, _ := filepath.Rel(filepath.Join(root, "tests", "testdata"), p)
			scripts[rel] = true
			scripts[filepath.Base(p)] = true
		}
		return nil
	})
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			where := filepath.Base(doc) + ":" + itoa(i+1)
			inRun := strings.Contains(line, "-run")
			for _, m := range nameRe.FindAllStringSubmatch(line, -1) {
				checked++
				n, star := m[1], m[2] == "*"
				if defined[n] || ((star || inRun) && isPrefix(n)) {
					continue
				}
				t.Errorf("%s names %s, which no _test.go file defines", where, n)
			}
			for _, m := range scriptRe.FindAllStringSubmatch(line, -1) {
				checked++
				if !scripts[m[1]] {
					t.Errorf("%s names the script %s, which is not under tests/testdata", where, m[1])
				}
			}
			for _, m := range pathRe.FindAllStringSubmatch(line, -1) {
				checked++
				p := strings.TrimSuffix(m[1], "/...")
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s names %s, which does not exist", where, m[1])
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d references found in the docs: the patterns are wrong", checked)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
