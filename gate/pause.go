//go:build linux

package gate

import (
	"time"
)

// Pauses says where the command-line pauses of a config's gates live:
// this host's pauses.json and, for a config with an [etcd] section, the
// store every host shares (docs/etcd.md, "Across hosts (etcd)"). It is passed
// to Run, Status and pause control explicitly; the config only says
// whether pauses are shared, the caller holds the connection. The zero
// value is this host's pauses only.
type Pauses struct {
	// Local is this host's pauses; nil: pauses.json in the config's
	// state dir (StateDirFor).
	Local *PauseFile
	// Shared is the store opened for the config's [etcd] section
	// (package etcdpause, in cron-gate-etcd); nil: none. It is consulted
	// only for a config whose [etcd] is set, so that a store opened for
	// one config is never applied to a config without [etcd] (serve
	// re-reads its config).
	Shared PauseStore
	// Claims, with Shared, is where once_per periods are claimed across
	// hosts (the same store, package etcdpause); nil: this host only.
	Claims PeriodClaims
}

// For returns p as it applies to cfg: Local set (pauses.json in cfg's
// state dir when p has none), Shared nil unless cfg names a cluster.
func (p Pauses) For(cfg *Config) Pauses {
	if p.Local == nil {
		p.Local = NewPauseFile(StateDirFor(cfg))
	}
	if cfg == nil || !cfg.Etcd.Set() {
		p.Shared, p.Claims = nil, nil
	}
	return p
}

// PauseOf returns the pause that applies to gate g at now, or nil: cmd,
// its command-line pause (nil: none), when it is active — it carries
// since, until and who — else the config's.
func PauseOf(g *GateConfig, cmd *Pause, now time.Time) *Pause {
	if cmd.Active(now) {
		p := *cmd
		return &p
	}
	if g.Paused {
		return &Pause{By: ByConfig, Reason: g.Reason}
	}
	return nil
}

// describePause is a pause for people: "paused by command (ops@host):
// quota, until 2026-11-29T10:00:00Z".
func describePause(p *Pause) string {
	s := "paused by " + p.By
	if p.Who != "" {
		s += " (" + p.Who + ")"
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if !p.Until.IsZero() {
		s += ", until " + p.Until.Format(time.RFC3339)
	}
	return s
}
