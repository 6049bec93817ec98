//go:build linux

package crongate

import (
	"os"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// metrics is `cron-gate metrics`: the Prometheus text exposition of every
// gate's status and of the watchdog's last check, on stdout. It only
// reads.
func metrics(cfg *gate.Config, ps gate.Pauses, out *safetext.Printer) int {
	rep, err := gate.Status(cfg, ps, time.Now())
	if err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	for _, w := range rep.Warnings {
		out.Warnf("%s", w)
	}
	st, err := watch.ReadState(cfg)
	if err != nil {
		out.Warnf("%v; the watchdog's conditions are left out", err)
		st = nil
	}
	if err := watch.WriteMetrics(os.Stdout, cfg, rep, st); err != nil {
		out.Errorf("%v", err)
		return runner.ExitFailure
	}
	return 0
}
