//go:build linux

// Package hcping sends healthchecks.io pings around a gate's runs.
//
// Healthchecks pings: a gate with `healthchecks_url` tells a
// healthchecks.io-compatible service about each run, so that users who
// already watch their jobs there keep doing so:
//
//	URL/start      when the command has started (in the background)
//	URL            it succeeded
//	URL/N          it failed with exit code N (failure, timeout 124, 126, 127)
//	URL/fail       it died of a signal
//	URL/log        it exited with the skip code (busy): logged, no state change
//
// Runs that are skipped before the command starts (paused, legacy lock)
// ping nothing. A ping never changes the run's exit code, and a dead URL
// never holds the command up for long: the start ping runs beside the
// command with hcTimeout, and after the command has ended cron-gate waits
// at most hcTimeout for the start ping and hcTimeout for the end ping (so
// at most about 2 s). A failed ping is a warning on stderr (cron mails
// it); the URL, which holds the check's secret, is not printed. Pings go
// through the proxy the environment names (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY; package httppost) and follow no redirect.
package hcping

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/httppost"
)

// hcTimeout bounds one ping.
var hcTimeout = time.Second

// hcPinger pings one gate's URL around one run.
type hcPinger struct {
	base     string
	gate     string
	run      string
	out      gate.Printer
	started  chan struct{} // closed when the start ping is done
	startErr error
}

// New is a gate.Invocation's Observer: the pinger of one run of gate g, or
// nil when the gate has no healthchecks_url.
func New(g *gate.GateConfig, run string, out gate.Printer) gate.RunObserver {
	if g == nil || g.HealthchecksURL == "" {
		return nil
	}
	return &hcPinger{base: g.HealthchecksURL, gate: g.Name, run: run, out: out}
}

// Started sends URL/start in the background.
func (p *hcPinger) Started() {
	p.started = make(chan struct{})
	go func() {
		defer close(p.started)
		p.startErr = p.ping("start", "cron-gate "+p.gate+" run "+p.run+" started")
	}()
}

// Finished waits (bounded) for the start ping and sends the end ping for
// the run's end record.
func (p *hcPinger) Finished(rec journal.Record) {
	if p.started != nil {
		<-p.started // bounded by the start ping's own hcTimeout
		if p.startErr != nil {
			p.out.Warnf("gate %s: healthchecks ping /start: %v", p.gate, p.startErr)
		}
	}
	suffix := ""
	switch {
	case rec.Outcome == journal.OutcomeSuccess:
	case rec.Outcome == journal.OutcomeSkipped:
		suffix = "log"
	case rec.Outcome == journal.OutcomeSignal || rec.Exit == nil || *rec.Exit == 0:
		suffix = "fail"
	default:
		suffix = strconv.Itoa(*rec.Exit)
	}
	msg := fmt.Sprintf("cron-gate %s run %s: %s", p.gate, p.run, rec.Outcome)
	if rec.Exit != nil {
		msg += fmt.Sprintf(", exit %d", *rec.Exit)
	}
	if rec.Signal != "" {
		msg += ", " + rec.Signal
	}
	if rec.Reason != "" {
		msg += ", " + rec.Reason
	}
	if !rec.Started.IsZero() {
		msg += fmt.Sprintf(", after %v", (time.Duration(rec.DurationMS) * time.Millisecond))
	}
	if err := p.ping(suffix, msg); err != nil {
		name := "/" + suffix
		if suffix == "" {
			name = "(success)"
		}
		p.out.Warnf("gate %s: healthchecks ping %s: %v", p.gate, name, err)
	}
}

// ping POSTs body to the base URL with /suffix added to its path.
func (p *hcPinger) ping(suffix, body string) error {
	target, err := hcURL(p.base, suffix)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hcTimeout)
	defer cancel()
	resp, err := httppost.Post(ctx, target, "text/plain; charset=utf-8", []byte(body), nil)
	if err != nil {
		return err
	}
	if !resp.OK() {
		return fmt.Errorf("HTTP %d %s", resp.Status, resp.Reason)
	}
	return nil
}

// hcURL adds /suffix to the URL's path, keeping its query.
func hcURL(base, suffix string) (string, error) {
	if suffix == "" {
		return base, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + suffix
	u.RawPath = ""
	return u.String(), nil
}
