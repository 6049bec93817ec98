//go:build linux

// Package hcping sends healthchecks.io pings around a gate's runs, and
// the one HTTP POST (Post, post.go) that they and the watchdog's webhook
// notifier (package watch) send.
//
// Healthchecks pings: a gate with `healthchecks_url` tells a
// healthchecks.io-compatible service about each run, so that users who
// already watch their jobs there keep doing so. The endpoints are those of
// healthchecks.io's Pinging API (https://healthchecks.io/docs/http_api/):
//
//	URL/start      when the command has started (in the background)
//	URL            it succeeded; or it skipped and the gate does not
//	               count as skipping yet; or it is paused: the body says which
//	URL/N          it failed with exit code N (failure, timeout 124, 126, 127)
//	URL/fail       it died of a signal; or it skipped and the gate counts
//	               as skipping: the body names what holds it back
//
// Healthchecks and the watchdog say the same (docs/watchdog.md, "Healthchecks
// and the watchdog"). A skip — busy (the command exited with the skip code
// after /start), a legacy lock or pidfile, the coordinator down — is a
// success while the gate does not count as skipping, and /fail once it
// does: blocked for at least skipping_after (gate.GateConfig.CountsAsSkipping,
// the rule of the watchdog's skipping condition), the body naming the
// holder (gate.Skipping.Words). Routine contention thus keeps the check
// green (healthchecks.io marks a check that received /start and then
// neither a success nor a failure within its grace time as down, and /log
// changes no state), and a gate blocked for ever turns it red. A paused
// skip is a success whose body says paused: a pause is deliberate, the
// watchdog holds every condition of a paused gate, and so the check stays
// up. A skip of a done period (once_per) pings nothing: its period's run
// was pinged.
//
// Every ping of a run carries the same run ID, ?rid=UUID: a random UUID
// (version 4) in the canonical lower-case form healthchecks.io asks for
// (https://blog.healthchecks.io/2022/11/using-run-ids-to-track-run-times-of-overlapping-jobs/),
// so that the start and end of overlapping runs pair right. The body
// names cron-gate's own run ID too.
//
// A ping never changes the run's exit code, and a dead URL
// never holds the command up for long: the start ping runs beside the
// command with hcTimeout, and after the command has ended cron-gate waits
// at most hcTimeout for the start ping and hcTimeout for the end ping (so
// at most about 2 s). A failed ping is a warning on stderr (cron mails
// it); the URL, which holds the check's secret, is not printed. Pings go
// through the proxy the environment names (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY; Post, post.go) and follow no redirect.
package hcping

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/runner"
)

// hcTimeout bounds one ping.
var hcTimeout = time.Second

// hcPinger pings one gate's URL around one run.
type hcPinger struct {
	g        *gate.GateConfig
	base     string
	gate     string
	run      string
	rid      string // the run's UUID, on every ping
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
	return &hcPinger{g: g, base: g.HealthchecksURL, gate: g.Name, run: run, rid: newRID(), out: out}
}

// newRID returns a random UUID, version 4, in canonical form
// (8-4-4-4-12 lower-case hex digits): healthchecks.io's run ID.
func newRID() string {
	var b [16]byte
	rand.Read(b[:])         // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Started sends URL/start in the background.
func (p *hcPinger) Started() {
	p.started = make(chan struct{})
	go func() {
		defer close(p.started)
		p.startErr = p.ping("start", "cron-gate "+p.gate+" run "+p.run+" started")
	}()
}

// waitStart waits (bounded by the start ping's own hcTimeout) for the
// start ping, if one was sent, and warns if it failed.
func (p *hcPinger) waitStart() {
	if p.started != nil {
		<-p.started
		if p.startErr != nil {
			p.out.Warnf("gate %s: healthchecks ping /start: %v", p.gate, p.startErr)
		}
	}
}

// Finished waits for the start ping and sends the end ping for the run's
// end record: success, /N or /fail.
func (p *hcPinger) Finished(rec journal.Record) {
	p.waitStart()
	suffix := ""
	switch {
	case rec.Outcome == journal.OutcomeSuccess:
	case rec.Outcome == journal.OutcomeSignal || rec.Exit == nil || *rec.Exit == 0:
		suffix = "fail"
	default:
		suffix = strconv.Itoa(*rec.Exit)
	}
	p.send(suffix, p.describe(rec))
}

// Skipped sends the ping of a skip (see the package doc): a success while
// the gate does not count as skipping and when it is paused, else /fail
// naming what holds it back.
func (p *hcPinger) Skipped(rec journal.Record, sk *gate.Skipping) {
	p.waitStart()
	msg := p.describe(rec)
	suffix := ""
	switch {
	case rec.Reason == journal.ReasonPaused:
		msg += "; paused: a deliberate skip, not a failure"
	case p.g.CountsAsSkipping(sk, rec.Time):
		suffix = "fail"
		msg += fmt.Sprintf("; skipping: blocked since %s (%d skips in a row, skipping_after %v); now: %s",
			sk.Since.UTC().Format(time.RFC3339), sk.Skips, runner.FormatDuration(p.g.SkippingAfterFor()), sk.Words())
	}
	p.send(suffix, msg)
}

// describe is a ping's body: the gate, the run and how it ended.
func (p *hcPinger) describe(rec journal.Record) string {
	msg := fmt.Sprintf("cron-gate %s run %s: %s", p.gate, p.run, rec.Outcome)
	if rec.Outcome == journal.OutcomeSkipped && rec.Detail != "" {
		msg += " (" + rec.Detail + ")"
	}
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
	return msg
}

// send pings and warns when the ping fails.
func (p *hcPinger) send(suffix, msg string) {
	if err := p.ping(suffix, msg); err != nil {
		name := "/" + suffix
		if suffix == "" {
			name = "(success)"
		}
		p.out.Warnf("gate %s: healthchecks ping %s: %v", p.gate, name, err)
	}
}

// ping POSTs body to the base URL with /suffix added to its path and the
// run ID in its query.
func (p *hcPinger) ping(suffix, body string) error {
	target, err := hcURL(p.base, suffix, p.rid)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), hcTimeout)
	defer cancel()
	resp, err := Post(ctx, target, "text/plain; charset=utf-8", []byte(body), nil)
	if err != nil {
		return err
	}
	if !resp.OK() {
		return fmt.Errorf("HTTP %d %s", resp.Status, resp.Reason)
	}
	return nil
}

// hcURL adds /suffix to the URL's path and rid=RID to its query, keeping
// the query it has (?create=1 of slug URLs).
func hcURL(base, suffix, rid string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if suffix != "" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + suffix
		u.RawPath = ""
	}
	if rid != "" {
		q := u.RawQuery
		if q != "" {
			q += "&"
		}
		u.RawQuery = q + "rid=" + rid
	}
	return u.String(), nil
}
