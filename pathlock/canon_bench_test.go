package pathlock

import (
	"fmt"
	"os"
	"testing"
)

// canonBenchPaths creates 5,000 files in a temp tree and returns 10,000 absolute
// paths: the 5,000 files, spelled in various ways, and 5,000 missing ones.
func canonBenchPaths(tb testing.TB) []string {
	tb.Helper()
	root := canonBuildTree(tb)
	var paths []string
	for d := range 100 {
		dir := fmt.Sprintf("%s/work/data/d%02d", root, d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for i := range 50 {
			name := fmt.Sprintf("%s/file-%03d.txt", dir, i)
			if err := os.WriteFile(name, nil, 0o644); err != nil {
				tb.Fatal(err)
			}
			paths = append(paths, name, fmt.Sprintf("%s/missing/file-%03d.txt", dir, i))
		}
	}
	return paths
}

// BenchmarkCanonicalSet10k canonicalises 10,000 paths (half existing) per op.
func BenchmarkCanonicalSet10k(b *testing.B) {
	paths := canonBenchPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CanonicalSet(paths); err != nil {
			b.Fatal(err)
		}
	}
}
