//go:build linux

// Command dashgen writes what bench.sh serves with the real
// `cron-gate serve`: a state dir of many declared gates with journals
// (package tests/bench/dashstate), their config file and their crontab. It prints the
// config's path.
//
//	go run ./tests/bench/dashgen -gates 200 -records 100 -dir D
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crongate/crongate/tests/bench/dashstate"
)

func main() {
	gates := flag.Int("gates", 200, "gates")
	records := flag.Int("records", 100, "journal records per gate")
	dir := flag.String("dir", "", "directory to create the state dir, config.toml and crontab in")
	flag.Parse()
	if *dir == "" {
		fail(fmt.Errorf("-dir is required"))
	}
	state := filepath.Join(*dir, "state")
	cfg, tab, err := dashstate.Write(state, *gates, *records, time.Now())
	if err != nil {
		fail(err)
	}
	crontab := filepath.Join(*dir, "crontab")
	if err := os.WriteFile(crontab, tab, 0o644); err != nil {
		fail(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "state_dir = %q\n\n[check]\ncrontab_command = [\"cat\", %q]\ncron_d = []\n\n", state, crontab)
	names := make([]string, 0, len(cfg.Gates))
	for n := range cfg.Gates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := cfg.Gates[n]
		fmt.Fprintf(&b, "[gates.%s]\ninterval = %q\n", n, g.Interval.String())
		if g.Paused {
			fmt.Fprintf(&b, "paused = true\nreason = %q\n", g.Reason)
		}
		b.WriteString("\n")
	}
	config := filepath.Join(*dir, "config.toml")
	if err := os.WriteFile(config, []byte(b.String()), 0o644); err != nil {
		fail(err)
	}
	fmt.Println(config)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dashgen:", err)
	os.Exit(1)
}
