package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check.json is read within 16 MiB (docs/security.md): a file of exactly
// 16 MiB is read, one byte more is refused with a message naming the limit.
func TestStateFileBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, StateFile)
	for _, size := range []int64{16 << 20, 16<<20 + 1} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		data, err := readStateFile(dir)
		if size <= 16<<20 && (err != nil || int64(len(data)) != size) {
			t.Errorf("a check.json of %d bytes: read %d, %v; want it whole", size, len(data), err)
		}
		if size > 16<<20 && (err == nil || !strings.Contains(err.Error(), "16 MiB")) {
			t.Errorf("a check.json of %d bytes: %v; want an error naming 16 MiB", size, err)
		}
	}
}
