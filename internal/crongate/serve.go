//go:build linux

package crongate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	_ "time/tzdata" // [serve] time_zone works on hosts without /usr/share/zoneinfo

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/dashboard"
	"github.com/crongate/crongate/internal/gateconf"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safeopen"
	"github.com/crongate/crongate/internal/safetext"
	"github.com/crongate/crongate/internal/watch"
)

// serve is `cron-gate serve` (docs/dashboard.md, "cron-gate serve"). It runs until
// SIGTERM or SIGINT, then stops gracefully and exits 0; 125 when it cannot
// start (address in use, no token off loopback, bad config).
func serve(cfgFlag string, cfg *gate.Config, ps gate.Pauses, c *ServeCmd, out *safetext.Printer, sigs <-chan os.Signal) int {
	listen := c.Listen
	if listen == "" {
		listen = cfg.Serve.Listen
	}
	if listen == "" {
		listen = dashboard.DefaultListen
	}
	token, err := serveToken(cfg)
	if err != nil {
		out.Errorf("serve: %v", err)
		return runner.ExitFailure
	}
	loc, err := serveZone(cfg)
	if err != nil {
		out.Errorf("serve: %v", err)
		return runner.ExitFailure
	}
	cronLoc, warn := cronZone(systemZoneFile)
	if warn != "" {
		out.Warnf("serve: %s", warn)
	}
	path, missingOK := gate.ConfigPath(cfgFlag)
	// The shared store, if any, was opened for the config's [etcd] as it
	// was at the start; a config re-read since must name the same.
	var opened *gate.EtcdConfig
	if ps.Shared != nil {
		opened = &cfg.Etcd
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = dashboard.Serve(ctx, dashboard.Options{
		Listen:       listen,
		Token:        token,
		TimeZone:     loc,
		CronTimeZone: cronLoc,
		Pauses:       ps,
		Load: func() (*gate.Config, error) {
			cfg, err := gateconf.Load(path, missingOK)
			if err == nil && !etcdUnchanged(cfg, opened) {
				return nil, fmt.Errorf("config %s: [etcd] was added or changed while serving; restart cron-gate serve", path)
			}
			return cfg, err
		},
		// The typo rule applies here too (one implementation); the page's
		// buttons only name gates it lists, which are all known ones.
		Pause: func(cfg *gate.Config, name string, p gate.Pause) error {
			return Pause(cfg, ps, name, p, false)
		},
		Resume: func(cfg *gate.Config, name string, force bool) (string, error) {
			r, err := Resume(cfg, ps, gateconf.SetPaused, name, force)
			if r.Warning != "" {
				out.Warnf("%s", r.Warning)
			}
			return r.Msg, err
		},
		Trigger: func(cfg *gate.Config, name, who string) (string, error) {
			return startTrigger(cfgFlag, cfg, name, who)
		},
		Crontab: func() (*watch.CronScan, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The config as it is now: [check] may have been edited.
			cur, err := gateconf.Load(path, missingOK)
			if err != nil {
				return nil, err
			}
			return watch.NewSystemProbe(cur.Check).Crontabs(ctx)
		},
		Log: os.Stderr,
	}, func(addr, loginURL string) {
		// On stdout, so that a supervisor or a test can read the address
		// (--listen 127.0.0.1:0 picks a free port).
		fmt.Printf("cron-gate: serving the dashboard on http://%s/\n", addr)
		if loginURL != "" {
			// No token configured: reads are open on loopback, the
			// buttons need this process's action token. stdout is the
			// invoking user's (or the service's journal), not the
			// other local users'.
			fmt.Printf("cron-gate: to pause and resume from the dashboard, open %s once\n", loginURL)
		}
	})
	if err != nil {
		out.Errorf("serve: %v", err)
		if errors.Is(err, dashboard.ErrTokenRequired) {
			out.Hintf("set $CRON_GATE_TOKEN, or [serve] token_file = \"/etc/cron-gate/token\" (a file only its owner can read), to at least %d random bytes, e.g. openssl rand -hex 16", dashboard.MinTokenLen)
		}
		return runner.ExitFailure
	}
	return 0
}

// maxTokenFile bounds a token file: a token is a line of random bytes.
const maxTokenFile = 4096

// serveToken returns the auth token: $CRON_GATE_TOKEN, else the contents
// of [serve] token_file (trimmed), which must be a regular file (not a
// symlink) of at most 4 KiB that neither group nor others can read or
// write; "" if neither is set.
func serveToken(cfg *gate.Config) (string, error) {
	if t, ok := os.LookupEnv("CRON_GATE_TOKEN"); ok && t != "" {
		return t, nil
	}
	f := cfg.Serve.TokenFile
	if f == "" {
		return "", nil
	}
	// Not followed if a symlink, never opened if not a regular file (a
	// FIFO would hang the open, a device could be endless), at most
	// maxTokenFile bytes.
	data, st, err := safeopen.ReadFile(f, maxTokenFile, false)
	if err != nil {
		if fe, ok := errors.AsType[*safeopen.FileError](err); ok {
			return "", fmt.Errorf("token_file %w", fe)
		}
		return "", fmt.Errorf("token_file %s: %v", f, safeopen.Cause(err))
	}
	if st.Mode&0o077 != 0 {
		return "", fmt.Errorf("token_file %s has mode %04o: a token others can read is no secret; chmod 600 it", f, st.Mode&0o777)
	}
	t := strings.TrimSpace(string(data))
	if t == "" {
		return "", fmt.Errorf("token_file %s is empty", f)
	}
	return t, nil
}

// systemZoneFile is the system's time zone: the one cron runs jobs in.
const systemZoneFile = "/etc/localtime"

// cronZone returns the zone cron reads the crontab in, for the next run
// times: the system's, from file (/etc/localtime) — Debian's cron and
// cronie run in it, whatever $TZ the user running serve has. Without the
// file, UTC, as the C library then uses; an unreadable or unparsable file
// is UTC too, with a warning.
func cronZone(file string) (*time.Location, string) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return time.UTC, ""
	}
	if err != nil {
		return time.UTC, fmt.Sprintf("cron's time zone: %v; next run times are computed in UTC", err)
	}
	name := "Local"
	if target, err := filepath.EvalSymlinks(file); err == nil {
		if _, zone, ok := strings.Cut(target, "/zoneinfo/"); ok && zone != "" {
			name = zone
		}
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		return time.UTC, fmt.Sprintf("cron's time zone: %s: %v; next run times are computed in UTC", file, err)
	}
	return loc, ""
}

// serveZone returns the zone the page shows times in: [serve] time_zone,
// else $TZ, else local time.
func serveZone(cfg *gate.Config) (*time.Location, error) {
	name := cfg.Serve.TimeZone
	if name == "" {
		name = strings.TrimPrefix(os.Getenv("TZ"), ":")
	}
	if name == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %v", name, err)
	}
	return loc, nil
}
