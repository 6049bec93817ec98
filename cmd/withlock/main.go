//go:build linux

// Command withlock runs a command while holding per-path flock locks that
// are byte-compatible with the example blog's Python workers, plus
// concurrency slots, all or nothing. See docs/withlock.md for the contract.
//
// This is the binary cron runs on every tick: it links no CLI library and
// no backend but the local one, and parses the common command lines
// itself; anything else (help, errors, rare forms) is handed to
// withlock-full, which parses with kong, and a line for another backend
// (--backend etcd) to the program that serves it (withlock.Main).
package main

import (
	"os"

	"github.com/crongate/crongate/internal/withlock"
)

func main() {
	os.Exit(withlock.Main(os.Args[1:]))
}
