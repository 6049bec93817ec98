//go:build linux

// Command gen writes the generated man pages and shell completions
// (package clidoc) under a directory:
//
//	go run ./internal/clidoc/gen -o build/doc -version 0.1.0 -date 2026-12-01
//
// DIR/man/man1/withlock.1, DIR/man/man1/cron-gate.1,
// DIR/man/man5/cron-gate.toml.5, DIR/completions/{bash,zsh,fish}/....
// The Makefile and dist/deb/build.sh run it; nothing it writes is
// committed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crongate/crongate/internal/buildinfo"
	"github.com/crongate/crongate/internal/clidoc"
)

func main() {
	out := flag.String("o", "", "output directory (required)")
	version := flag.String("version", buildinfo.VersionString(), "the version the pages name")
	date := flag.String("date", "", "the pages' date, YYYY-MM-DD (required: the commit's, for reproducible builds)")
	flag.Parse()
	if *out == "" || *date == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen -o DIR -date YYYY-MM-DD [-version V]")
		os.Exit(2)
	}
	files, err := clidoc.Files(clidoc.Options{Version: *version, Date: *date})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		p := filepath.Join(*out, f.Path)
		// A build tool writing into the build tree it was given (make
		// docs), never a shared dir: no safe walk needed.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
