//go:build linux

// Command withlock runs a command while holding per-path flock locks that
// are byte-compatible with the example blog's Python workers, plus
// concurrency slots, all or nothing. See docs/withlock.md for the contract.
//
// This one file does every local feature: it parses the common command
// lines with a fast parser and anything else (help, errors, rare forms,
// withlock who) with kong, in the same process. It links no backend but
// the local one: a line for another backend (--backend etcd) is handed
// to the program that serves it, withlock-etcd (withlock.Main).
package main

import (
	"os"

	"github.com/crongate/crongate/internal/withlock"
)

func main() {
	os.Exit(withlock.Main(os.Args[1:]))
}
