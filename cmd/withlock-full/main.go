//go:build linux

// Command withlock-full is withlock with kong's full command-line parser:
// help, error messages and every form of the command line. withlock hands
// it any line its fast parser declines; it can also be run directly.
package main

import (
	"os"

	wc "github.com/crongate/crongate/internal/withlock"
	"github.com/crongate/crongate/internal/withlock/kongparse"
)

func main() {
	os.Exit(kongparse.Main(kongparse.Withlock, wc.Local, os.Args[1:]))
}
