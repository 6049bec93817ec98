package etcdpause

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
)

func TestPauseRoundTrip(t *testing.T) {
	since := time.Date(2026, 11, 29, 9, 10, 30, 123456789, time.UTC)
	for _, p := range []gate.Pause{
		{Reason: "migration", Since: since, Until: since.Add(time.Hour), Who: "ops@web1"},
		{Since: since},
		{By: gate.ByConfig, Reason: "forced to command"},
		{},
	} {
		data, err := EncodePause(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodePause("/k", data)
		if err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
		want := p
		want.By = gate.ByCommand
		if !got.Since.Equal(want.Since) || !got.Until.Equal(want.Until) || got.By != want.By || got.Reason != want.Reason || got.Who != want.Who {
			t.Errorf("round trip of %+v gave %+v (%s)", p, got, data)
		}
	}
}

func TestDecodePause(t *testing.T) {
	ok := map[string]gate.Pause{
		`{"by":"command","reason":"r","who":"a@b"}`: {By: gate.ByCommand, Reason: "r", Who: "a@b"},
		`{}`:                    {By: gate.ByCommand},
		` {"reason":"by hand"}`: {By: gate.ByCommand, Reason: "by hand"},
		`{"by":"command","future_field":[1,2,3]}`:         {By: gate.ByCommand},
		`{"until":"2026-01-02T03:04:05Z","by":"command"}`: {By: gate.ByCommand, Until: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	for in, want := range ok {
		got, err := DecodePause("/cron-gate/pauses/x", []byte(in))
		if err != nil || got.By != want.By || got.Reason != want.Reason || got.Who != want.Who || !got.Until.Equal(want.Until) {
			t.Errorf("DecodePause(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{
		``, `   `, `null`, `[]`, `"paused"`, `1`, `{`, `{"by":"config"}`, `{"by":1}`,
		`{"until":"tomorrow"}`, `{} {}`, "\xff\xfe", strings.Repeat(" ", maxValue+1),
		// Control and bidi characters in what every host prints
		// (issue 12, item 7): refused like any corrupt value.
		`{"reason":"L1\nL2\u001b]0;pwned\u0007"}`, `{"reason":"until Jan 1, 2025\u202e"}`,
		`{"reason":"\u2066x"}`, `{"who":"ops\u001b[31m@web1"}`, `{"reason":"c1 \u009b31m"}`,
	} {
		_, err := DecodePause("/cron-gate/pauses/x", []byte(in))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodePause(%q) = %v; want ErrCorrupt", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "/cron-gate/pauses/x") {
			t.Errorf("error %q does not name the key", err)
		}
	}
}

func TestRecordResumedAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	for _, c := range []struct {
		r    record
		want time.Time
	}{
		{record{}, time.Time{}},
		{record{Resumed: t0}, t0},
		{record{Resumed: t0, PauseUntil: t0.Add(10 * time.Minute)}, t0.Add(10 * time.Minute)}, // ended by itself since
		{record{Resumed: t0, PauseUntil: now.Add(time.Minute)}, t0},                           // still paused
		{record{Resumed: now, PauseUntil: t0}, now},
		{record{PauseUntil: now}, now},
	} {
		if got := c.r.resumedAt(now); !got.Equal(c.want) {
			t.Errorf("%+v.resumedAt = %v, want %v", c.r, got, c.want)
		}
	}
}

func TestLeaseTTL(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 1}, {0, 1}, {time.Millisecond, 1}, {time.Second, 1},
		{time.Second + time.Nanosecond, 2}, {2500 * time.Millisecond, 3}, {time.Hour, 3600},
		{math.MaxInt64, maxLeaseTTL},
	} {
		if got := leaseTTL(c.d); got != c.want {
			t.Errorf("leaseTTL(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestKeys(t *testing.T) {
	if k := PauseKey(DefaultPrefix, "backup"); k != "/cron-gate/pauses/backup" {
		t.Errorf("PauseKey = %q", k)
	}
	if k := ResumeKey("/site-a/cron-gate", "backup"); k != "/site-a/cron-gate/resumed/backup" {
		t.Errorf("ResumeKey = %q", k)
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, cfg := range []Config{
		{Prefix: "cron-gate"},
		{Prefix: "/cron-gate/"},
		{Endpoints: []string{"http://127.0.0.1:2379", ""}},
		{Timeout: -time.Second},
	} {
		if s, err := Open(cfg); err == nil {
			s.Close()
			t.Errorf("Open(%+v) accepted", cfg)
		}
	}
}

// No cluster at all (a closed port): every call returns ErrUnavailable
// within the configured timeout, never hangs; bad gate names are refused
// before anything is sent.
func TestUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, err := Open(Config{Endpoints: []string{"http://" + addr}, Timeout: 700 * time.Millisecond, DialTimeout: 200 * time.Millisecond, Who: "t@h"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	calls := map[string]func() error{
		"Get":  func() error { _, err := s.Get(ctx, "backup"); return err },
		"List": func() error { _, err := s.List(ctx); return err },
		"Set":  func() error { return s.Set(ctx, "backup", gate.Pause{Until: time.Now().Add(time.Hour)}) },
		"Clear": func() error {
			_, err := s.Clear(ctx, "backup")
			return err
		},
		"ResumedAt": func() error { _, err := s.ResumedAt(ctx, "backup"); return err },
	}
	for name, f := range calls {
		t0 := time.Now()
		err := f()
		took := time.Since(t0)
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v; want ErrUnavailable", name, err)
		}
		if took > 15*time.Second { // a hang-catcher, not a timing assertion
			t.Errorf("%s took %v with a 700ms timeout", name, took)
		}
		t.Logf("%s: %v after %v", name, err, took.Round(time.Millisecond))
	}
	// A caller's deadline shorter than the timeout wins.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := s.Get(cctx, "backup"); !errors.Is(err, ErrUnavailable) || time.Since(t0) > 10*time.Second {
		t.Errorf("Get with a 200ms deadline: %v after %v", err, time.Since(t0))
	}
	for _, bad := range []string{"", "../x", "a/b", "pause"} {
		if _, err := s.Get(ctx, bad); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Get(%q) = %v; want a name error", bad, err)
		}
		if err := s.Set(ctx, bad, gate.Pause{}); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Set(%q) = %v; want a name error", bad, err)
		}
	}
	if err := s.Set(ctx, "backup", gate.Pause{Until: time.Now().Add(-time.Second)}); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("Set with a past Until = %v; want refused before contacting etcd", err)
	}
}
