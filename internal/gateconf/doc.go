//go:build linux

// Package gateconf is cron-gate's TOML config on disk: it decodes and
// validates a config file into a gate.Config (Load, Parse), with the
// line of every bad key in its errors; fills the config cache the lean
// cron-gate reads on the run path (LoadGate); and edits the file safely
// under the config lock, keeping every byte it does not change
// (SetPaused, EditSession).
//
// It is the only package that links the TOML decoder, so that the lean
// cron-gate, which runs a cached gate without decoding the file, does not
// (tests/deps_test.go).
package gateconf
