//go:build linux

// Package dashboard is `cron-gate serve`: a web page with one row per
// gate, its JSON API (/api/summary, which the watchdog and other tools
// read), the Prometheus exposition (/metrics), a health check (/healthz),
// and pause / resume / force-resume buttons.
//
// Every state change needs a secret: the configured auth token, which
// every request but /healthz and the assets needs too; or, without one
// (loopback only), a per-process action token: reads are then open to
// the machine's users, as the world-readable state files are, and the
// buttons work in the browsers that opened the login URL Serve reports.
//
// It judges nothing itself: states come from gate.Status (the status
// view's judgement), conditions from the watchdog's last check
// (check.json), and the buttons call the same functions as `cron-gate
// pause` and `cron-gate resume`, passed in through Options so that this
// package does not depend on the config parser.
//
// The page and its assets are embedded (go:embed): no build step, nothing
// fetched at run time, no third-party origin. README.md (this directory) documents
// the endpoints, the JSON schema and the security rules.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// DefaultListen is the address Serve listens on when Options.Listen is
// empty: loopback only ([serve] listen's default, gate's table of keys).
const DefaultListen = gate.DefaultServeListen

// MinTokenLen is the shortest auth token accepted, in bytes.
const MinTokenLen = 16

// ErrTokenRequired is returned (wrapped) by New and Serve for a listen
// address that is not loopback when Options.Token is empty.
var ErrTokenRequired = errors.New("an auth token is required to listen on an address that is not loopback")

// Options configures the dashboard. Load, Pause and Resume are required.
type Options struct {
	// Listen is the TCP address to listen on (host:port; port 0 picks a
	// free one, Serve reports it). Empty: DefaultListen. A host that is
	// not a loopback IP or "localhost" (including an empty host, which
	// is every interface) requires Token.
	Listen string
	// Token, when set, is required on every request but /healthz and
	// the static assets: "Authorization: Bearer TOKEN", or the session
	// that opening /?token=TOKEN once opens in a browser (its cookie and
	// its key, never the token itself; session.go). At least MinTokenLen
	// bytes.
	Token string
	// ActionToken is used when Token is empty: GET requests (on
	// loopback) need no token, but pause, resume and force-resume need
	// this one, given the same ways as Token. Empty: New and Serve make
	// a random one for the process (which Serve reports to ready in the
	// login URL). At least MinTokenLen bytes. Ignored when Token is set.
	ActionToken string
	// TimeZone is the zone times are shown in (the page and the JSON).
	// Nil: time.Local.
	TimeZone *time.Location
	// CronTimeZone is the zone cron reads the crontab in, for the next
	// run times. Nil: time.Local (cron's own zone is the machine's).
	CronTimeZone *time.Location
	// Host is this host's name, for the gates' jitter offsets
	// (gate.JitterOffset) in their next run times. Empty: os.Hostname.
	Host string

	// Load returns the config; it is called at most about once a second
	// (the result is reused for ConfigTTL) and again after every pause or
	// resume, so edits of the file show at the next refresh.
	Load func() (*gate.Config, error)
	// Pauses are where the command-line pauses live (gate.Pauses.For
	// applies them to each config Load returns): the zero value is this
	// host's only; cron-gate-etcd sets Shared. The states shown read
	// them; Pause and Resume below are given the config.
	Pauses gate.Pauses
	// Pause pauses a gate from the command line (`cron-gate pause`):
	// Pause in internal/crongate. p.Since and p.Who are set by the dashboard.
	Pause func(cfg *gate.Config, name string, p gate.Pause) error
	// Resume lifts a gate's command-line pause; with force it also sets
	// paused = false in the config file, in place (`cron-gate resume`).
	// msg is one line for people. The dashboard refuses a resume without
	// force of a gate the config pauses (409) before calling it.
	Resume func(cfg *gate.Config, name string, force bool) (msg string, err error)
	// Trigger starts a manual run of a gate through the gate (`cron-gate
	// trigger NAME --by WHO`, not forced: a paused gate's run is
	// skipped) and returns at once, with one line for people; an error
	// says why it could not start (no command known for the gate).
	// Optional: nil, and the page has no "run now".
	Trigger func(cfg *gate.Config, name, who string) (msg string, err error)
	// Crontab returns the cron-gate jobs of the crontabs cron reads
	// (watch.SystemProbe.Crontabs), which the gates' schedules are read
	// from, each with its file and line. Optional: nil means no
	// schedules, only the config's intervals. Its result is reused for
	// CrontabTTL; an error is a warning in the summary.
	Crontab func() (*watch.CronScan, error)
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Log receives one line per internal error (a panic, a failed write).
	// Nil: os.Stderr.
	Log io.Writer
}

// How long the config and the crontab are reused.
const (
	ConfigTTL  = time.Second
	CrontabTTL = 30 * time.Second
)

// maxBody bounds a POST body.
const maxBody = 16 << 10

type handler struct {
	opts     Options
	loc      *time.Location
	cronLoc  *time.Location
	now      func() time.Time
	log      *log.Logger
	token    string   // what /?token= and the bearer header must hold: Token, else ActionToken
	sessions sessions // the browsers logged in with /?token= (session.go)
	open     bool     // no Token: GET needs no token, POST needs the action token
	who      string   // for the pauses the dashboard sets
	mux      *http.ServeMux

	cfgTTL   time.Duration // ConfigTTL; tests lengthen it
	loadMu   sync.Mutex    // held while Load runs: one load at a time
	cfgMu    sync.Mutex
	cfg      *gate.Config
	cfgErr   error     // the last load's error, kept as long as a config
	cfgAt    time.Time // when the last load ended; zero: none kept
	cfgGen   uint64    // bumped by every action, so a load begun before it is not kept
	cronMu   sync.Mutex
	cronJobs map[string][]watch.CrontabJob
	cronErr  error
	cronAt   time.Time

	schedMu sync.Mutex
	sched   map[string]parsedSchedule
}

// New returns the dashboard's handler. It checks the options: Load, Pause
// and Resume are set, a listen address that is not loopback has a token,
// a token is long enough.
func New(opts Options) (http.Handler, error) {
	h, err := newHandler(opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func newHandler(opts Options) (*handler, error) {
	if opts.Load == nil || opts.Pause == nil || opts.Resume == nil {
		return nil, errors.New("dashboard: Options.Load, Pause and Resume are required")
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
		// Said before the loopback rule, which would otherwise call
		// "127.0.0.1" (no port) an address that needs a token.
		hint := "host:port, like " + DefaultListen + " (port 0: any free port)"
		if !strings.Contains(opts.Listen, ":") || strings.HasPrefix(opts.Listen, "[") && strings.HasSuffix(opts.Listen, "]") {
			return nil, fmt.Errorf("dashboard: listen address %s has no port; give %s", safetext.Quote(opts.Listen), hint)
		}
		return nil, fmt.Errorf("dashboard: listen address %s is not %s", safetext.Quote(opts.Listen), hint)
	}
	if opts.Token != "" && len(opts.Token) < MinTokenLen {
		return nil, fmt.Errorf("dashboard: the auth token is %d bytes long; use at least %d (e.g. openssl rand -hex 16)", len(opts.Token), MinTokenLen)
	}
	if opts.Token == "" && !IsLoopback(opts.Listen) {
		return nil, fmt.Errorf("dashboard: listen address %s: %w", opts.Listen, ErrTokenRequired)
	}
	if opts.Token == "" && opts.ActionToken != "" && len(opts.ActionToken) < MinTokenLen {
		return nil, fmt.Errorf("dashboard: the action token is %d bytes long; use at least %d", len(opts.ActionToken), MinTokenLen)
	}
	h := &handler{opts: opts, loc: opts.TimeZone, cronLoc: opts.CronTimeZone, now: opts.Now,
		cfgTTL: ConfigTTL, sched: map[string]parsedSchedule{}}
	if h.loc == nil {
		h.loc = time.Local
	}
	if h.cronLoc == nil {
		h.cronLoc = time.Local
	}
	if h.opts.Host == "" {
		h.opts.Host, _ = os.Hostname()
	}
	if h.now == nil {
		h.now = time.Now
	}
	w := opts.Log
	if w == nil {
		w = os.Stderr
	}
	// The log quotes requests (a path, a client's TLS error): neutralised.
	h.log = log.New(textWriter{w}, "cron-gate: serve: ", 0)
	h.token, h.open = opts.Token, opts.Token == ""
	if h.open {
		h.token = opts.ActionToken
		if h.token == "" {
			var err error
			if h.token, err = randomString(); err != nil {
				return nil, fmt.Errorf("dashboard: action token: %w", err)
			}
		}
	}
	h.who = gate.Who() + " (dashboard)"
	h.routes()
	return h, nil
}

// textWriter writes text with its control and bidirectional characters
// escaped but for line feeds and tabs (safetext.Text).
type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, safetext.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// IsLoopback reports whether a listen address (host:port) listens on
// loopback only: its host is "localhost" or a loopback IP. An empty host
// (every interface), another name or an unparseable address is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve listens on opts.Listen and serves the dashboard until ctx is
// cancelled, then shuts down gracefully (requests in flight get up to 5
// seconds) and returns nil. ready, if not nil, is called once connections
// are accepted with the address actually listened on (so "127.0.0.1:0" is
// usable) and, when opts.Token is empty, the login URL that lets a browser
// pause and resume: http://ADDR/?token=ACTIONTOKEN ("" with a Token, which
// is never shown). It returns an error wrapping ErrTokenRequired for a
// non-loopback address without a token, and the listen error otherwise.
func Serve(ctx context.Context, opts Options, ready func(addr, loginURL string)) error {
	h, err := newHandler(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", h.opts.Listen)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	// "localhost" is resolved by the system: check what was bound too.
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && h.opts.Token == "" && !ta.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("dashboard: listen address %s is %s: %w", h.opts.Listen, ta, ErrTokenRequired)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          h.log,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		addr, login := ln.Addr().String(), ""
		if h.open {
			login = "http://" + addr + "/?token=" + url.QueryEscape(h.token)
		}
		ready(addr, login)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-errc
	if err != nil {
		srv.Close()
		return fmt.Errorf("dashboard: shutdown: %w", err)
	}
	return nil
}

// config returns the config, reloading it when older than ConfigTTL. A
// failed load is kept as long (an unreadable config is not re-read at
// every request), and one request at a time loads: the others wait for
// its result.
func (h *handler) config() (*gate.Config, error) {
	if cfg, ok, err := h.cachedConfig(); ok {
		return cfg, err
	}
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	if cfg, ok, err := h.cachedConfig(); ok {
		return cfg, err // loaded while this one waited
	}
	h.cfgMu.Lock()
	gen := h.cfgGen
	h.cfgMu.Unlock()
	cfg, err := h.opts.Load()
	if err == nil && cfg == nil {
		err = errors.New("no config")
	}
	if err != nil {
		cfg = nil
	}
	h.cfgMu.Lock()
	if gen == h.cfgGen {
		h.cfg, h.cfgErr, h.cfgAt = cfg, err, time.Now()
	}
	h.cfgMu.Unlock()
	return cfg, err
}

// cachedConfig returns the last load's result while it is fresh.
func (h *handler) cachedConfig() (cfg *gate.Config, ok bool, err error) {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	if h.cfgAt.IsZero() || time.Since(h.cfgAt) >= h.cfgTTL {
		return nil, false, nil
	}
	return h.cfg, true, h.cfgErr
}

// forgetConfig drops the cached config: an action may have changed it.
func (h *handler) forgetConfig() {
	h.cfgMu.Lock()
	h.cfg, h.cfgErr, h.cfgAt = nil, nil, time.Time{}
	h.cfgGen++
	h.cfgMu.Unlock()
}

// crontab returns the crontab's cron-gate jobs by gate, reread after
// CrontabTTL.
func (h *handler) crontab() (map[string][]watch.CrontabJob, error) {
	if h.opts.Crontab == nil {
		return nil, nil
	}
	h.cronMu.Lock()
	defer h.cronMu.Unlock()
	if !h.cronAt.IsZero() && time.Since(h.cronAt) < CrontabTTL {
		return h.cronJobs, h.cronErr
	}
	scan, err := h.opts.Crontab()
	h.cronJobs, h.cronErr, h.cronAt = nil, nil, time.Now()
	if err != nil {
		h.cronErr = fmt.Errorf("crontab: %v", err)
	} else {
		h.cronJobs = crontabIndex(scan)
	}
	return h.cronJobs, h.cronErr
}

// summary builds the summary at the current time.
func (h *handler) summary() (*Summary, error) {
	cfg, err := h.config()
	if err != nil {
		return nil, err
	}
	now := h.now()
	rep, err := gate.Status(cfg, h.opts.Pauses, now)
	if err != nil {
		return nil, err
	}
	rep.HideCommands() // whoever connects is not the user serve runs as
	st, stErr := watch.ReadState(cfg)
	jobs, cronErr := h.crontab()
	s := h.build(cfg, rep, st, stErr, jobs, now)
	if cronErr != nil {
		s.Warnings = append(s.Warnings, cronErr.Error())
	}
	return s, nil
}
