// Command benchserve serves the dashboard over a generated state dir, for
// dashboard/bench.sh (wrk against /api/summary) until it is killed. It
// prints the address it listens on, on one line, when it is ready.
//
//	go run ./dashboard/internal/benchserve -gates 200 -records 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crongate/crongate/dashboard"
	"github.com/crongate/crongate/dashboard/internal/benchstate"
	"github.com/crongate/crongate/gate"
)

func main() {
	gates := flag.Int("gates", 200, "gates")
	records := flag.Int("records", 100, "journal records per gate")
	listen := flag.String("listen", "127.0.0.1:0", "listen address (loopback)")
	dir := flag.String("dir", "", "state dir to create (default: a temporary one, removed at exit)")
	flag.Parse()
	d := *dir
	if d == "" {
		var err error
		if d, err = os.MkdirTemp("", "cron-gate-bench-"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(d)
	}
	cfg, tab, err := benchstate.Write(d, *gates, *records, time.Now())
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = dashboard.Serve(ctx, dashboard.Options{
		Listen: *listen,
		Load:   func() (*gate.Config, error) { return cfg, nil },
		Pause: func(cfg *gate.Config, name string, p gate.Pause) error {
			return gate.SetPause(gate.StateDirFor(cfg), name, p)
		},
		Resume: func(cfg *gate.Config, name string, force bool) (string, error) {
			_, err := gate.ClearPause(gate.StateDirFor(cfg), name)
			return "resumed gate " + name, err
		},
		Crontab: func() ([]byte, error) { return tab, nil },
	}, func(addr string) { fmt.Println(addr) })
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchserve:", err)
	os.Exit(1)
}
