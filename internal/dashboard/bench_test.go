package dashboard

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/watch"
	"github.com/crongate/crongate/tests/bench/dashstate"
)

// BenchmarkSummary200 is one GET /api/summary, handler-level (no network),
// over 200 declared gates with 100-record journals checkpointed as
// cron-gate leaves them, a 200-line crontab, 1 gate in 10 failing and 1 in
// 20 paused: gate.Status, the watchdog's state, the schedules and the JSON.
// bench.sh measures the same over loopback with wrk.
func BenchmarkSummary200(b *testing.B) {
	dir := b.TempDir()
	cfg, tab, err := dashstate.Write(dir, 200, 100, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	h, err := newHandler(Options{
		Load:    func() (*gate.Config, error) { return cfg, nil },
		Pause:   func(*gate.Config, string, gate.Pause) error { return nil },
		Resume:  func(*gate.Config, string, bool) (string, error) { return "", nil },
		Crontab: func() (*watch.CronScan, error) { return userCrontab(tab), nil },
		Log:     io.Discard,
	})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://127.0.0.1/api/summary", nil)
	b.ReportAllocs()
	b.ResetTimer()
	// CPU time as well as wall time: on a shared machine the wall time
	// of a run swings with the load; the CPU time it took much less.
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	defer func() {
		unix.Getrusage(unix.RUSAGE_SELF, &r1)
		cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		if i == 0 {
			b.ReportMetric(float64(w.Body.Len()), "body-bytes")
		}
	}
}
