//go:build linux

package clidoc

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/crongate/crongate/internal/runner"
)

// The build writes the generated man pages and shell completions with
// this test binary rather than a command of its own (make doc):
//
//	go test ./internal/clidoc -run '^TestWriteFiles$' -count=1 -args \
//		-write /abs/build/doc -version 0.1.0 -date 2026-12-01
//
// DIR/man/man1/withlock.1, DIR/man/man1/cron-gate.1,
// DIR/man/man5/cron-gate.toml.5, DIR/completions/{bash,zsh,fish}/....
// Nothing it writes is committed.
var (
	writeDir     = flag.String("write", "", "write every generated file under this absolute directory (make doc)")
	writeVersion = flag.String("version", runner.VersionString(), "with -write: the version the pages name")
	writeDate    = flag.String("date", "", "with -write: the pages' date, YYYY-MM-DD (the commit's, for reproducible builds)")
)

// TestWriteFiles writes Files under -write; without -write it writes them
// into a temporary directory, as make doc would, and reads each back, so
// that the build's way of writing them is tested in every run.
func TestWriteFiles(t *testing.T) {
	dir, date := *writeDir, *writeDate
	if dir == "" {
		dir, date = t.TempDir(), "2026-12-01"
	}
	if !filepath.IsAbs(dir) || date == "" {
		t.Fatal("-write takes an absolute directory and -date YYYY-MM-DD is required")
	}
	files, err := Files(Options{Version: *writeVersion, Date: date})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("Files returned nothing to write")
	}
	for _, f := range files {
		p := filepath.Join(dir, f.Path)
		// A build tool writing into the build tree it was given (make
		// doc), never a shared dir: no safe walk needed.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, f.Data) || len(got) == 0 {
			t.Fatalf("%s: written %d bytes, read back %d (%v)", f.Path, len(f.Data), len(got), err)
		}
	}
	for _, want := range []string{"man/man1/withlock.1", "man/man1/cron-gate.1", "man/man5/cron-gate.toml.5"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("make doc would not write %s: %v", want, err)
		}
	}
}
