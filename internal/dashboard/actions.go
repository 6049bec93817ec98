//go:build linux

package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

type actionKind int

const (
	actPause actionKind = iota
	actResume
	actForceResume
	actTrigger
)

// MaxReasonLen bounds a pause reason, in bytes.
const MaxReasonLen = 500

// MaxPauseFor bounds a pause's duration.
const MaxPauseFor = 366 * 24 * time.Hour

// Action is a parsed POST to /api/pause, /api/resume, /api/force-resume
// or /api/trigger.
type Action struct {
	Gate     string
	Reason   string        // pause only
	Duration time.Duration // pause only; 0: until resumed
	Until    time.Time     // pause only; zero: none (Duration or until resumed)
}

// actionBody is the JSON form of a request.
type actionBody struct {
	Gate     string `json:"gate"`
	Reason   string `json:"reason"`
	Duration string `json:"duration"`
	Until    string `json:"until"`
}

// badRequest is a parse error: its message is for the client, with its
// HTTP code.
type badRequest struct {
	code int
	msg  string
}

func (e *badRequest) Error() string { return e.msg }

func bad(format string, args ...any) error {
	return &badRequest{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// ParseAction reads an action from a request body of the given content
// type: application/json ({"gate", "reason", "duration", "until"}) or
// application/x-www-form-urlencoded (the same names). It checks the gate
// name (gate.CheckName), the reason (at most MaxReasonLen bytes that
// gate.CheckReason accepts: UTF-8 without control or bidirectional
// characters), the duration (a Go duration like 90m or
// 2h30m, or a number of days like 3d; more than 0 and at most MaxPauseFor)
// and until (RFC 3339, after now); duration and until exclude each other.
// It never panics; errors are one line for the client.
func ParseAction(contentType string, body []byte, now time.Time) (Action, error) {
	var b actionBody
	mt, _, err := mime.ParseMediaType(contentType)
	if contentType == "" {
		mt, err = "", nil
	}
	if err != nil {
		return Action{}, &badRequest{http.StatusUnsupportedMediaType, "unreadable Content-Type; send application/json or application/x-www-form-urlencoded"}
	}
	switch mt {
	case "application/json":
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return Action{}, bad("the body is not a JSON object with gate, reason, duration, until: %v", err)
		}
		if dec.More() {
			return Action{}, bad("the body holds more than one JSON value")
		}
	case "application/x-www-form-urlencoded":
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return Action{}, bad("the form cannot be read: %v", err)
		}
		for k, vs := range v {
			if len(vs) > 1 {
				return Action{}, bad("field %s is given %d times", safetext.Quote(k), len(vs))
			}
		}
		b = actionBody{Gate: v.Get("gate"), Reason: v.Get("reason"), Duration: v.Get("duration"), Until: v.Get("until")}
	default:
		return Action{}, &badRequest{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %s is not accepted; send application/json or application/x-www-form-urlencoded", safetext.Quote(contentType))}
	}
	a := Action{Gate: b.Gate, Reason: strings.TrimSpace(b.Reason)}
	if err := gate.CheckName(a.Gate); err != nil {
		return Action{}, bad("%v", err)
	}
	if len(a.Reason) > MaxReasonLen {
		return Action{}, bad("the reason is %d bytes long; at most %d", len(a.Reason), MaxReasonLen)
	}
	if err := gate.CheckReason(a.Reason); err != nil {
		return Action{}, bad("%v", err)
	}
	if d := strings.TrimSpace(b.Duration); d != "" {
		if a.Duration, err = parseDuration(d); err != nil {
			return Action{}, err
		}
	}
	if u := strings.TrimSpace(b.Until); u != "" {
		if a.Duration != 0 {
			return Action{}, bad("give a duration or an until time, not both")
		}
		t, err := time.Parse(time.RFC3339, u)
		if err != nil {
			return Action{}, bad("until %s is not an RFC 3339 time like 2026-12-01T09:00:00+09:00", safetext.Quote(u))
		}
		if !t.After(now) {
			return Action{}, bad("until %s is in the past", u)
		}
		if t.Sub(now) > MaxPauseFor {
			return Action{}, bad("until %s is more than %d days away", u, int(MaxPauseFor/(24*time.Hour)))
		}
		a.Until = t
	}
	return a, nil
}

// parseDuration reads 90m, 2h30m or 3d as every duration is read
// (runner.ParseDuration).
func parseDuration(s string) (time.Duration, error) {
	d, err := runner.ParseDuration(s)
	if err != nil {
		return 0, bad("duration %s is not a duration like 30m, 2h or 3d", safetext.Quote(s))
	}
	if d <= 0 {
		return 0, bad("duration %q is not positive", s)
	}
	if d > MaxPauseFor {
		return 0, bad("duration %s is longer than %d days", s, int(MaxPauseFor/(24*time.Hour)))
	}
	return d, nil
}

// action handles one POST: parse, check, call the hook, answer with a
// line for people.
func (h *handler) action(kind actionKind) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxBody))
				return
			}
			fail(w, r, http.StatusBadRequest, "the body cannot be read: "+err.Error())
			return
		}
		now := h.now()
		a, err := ParseAction(r.Header.Get("Content-Type"), body, now)
		if err != nil {
			code := http.StatusBadRequest
			var br *badRequest
			if errors.As(err, &br) {
				code = br.code
			}
			fail(w, r, code, err.Error())
			return
		}
		if kind == actTrigger && h.opts.Trigger == nil {
			fail(w, r, http.StatusNotImplemented, "run now is not available here")
			return
		}
		if kind != actPause && (a.Reason != "" || a.Duration != 0 || !a.Until.IsZero()) {
			fail(w, r, http.StatusBadRequest, "reason, duration and until are for pause only")
			return
		}
		// Load afresh: the decision must not rest on a cached config.
		h.forgetConfig()
		cfg, err := h.config()
		if err != nil {
			fail(w, r, http.StatusInternalServerError, err.Error())
			return
		}
		defer h.forgetConfig() // the action may have changed the config
		var msg string
		switch kind {
		case actPause:
			p := gate.Pause{Reason: a.Reason, Since: now, Until: a.Until, Who: h.who + fromAddr(r)}
			if a.Duration > 0 {
				p.Until = now.Add(a.Duration)
			}
			if err := h.opts.Pause(cfg, a.Gate, p); err != nil {
				h.log.Printf("pause gate %s: %v", a.Gate, err)
				fail(w, r, http.StatusInternalServerError, prefixed("pause gate "+a.Gate, err))
				return
			}
			msg = "paused gate " + a.Gate
			if !p.Until.IsZero() {
				msg += " until " + p.Until.In(h.loc).Format("2006-01-02 15:04 MST")
			}
		case actResume, actForceResume:
			force := kind == actForceResume
			if !force && cfg.Gate(a.Gate).Paused {
				fail(w, r, http.StatusConflict, fmt.Sprintf("gate %s is paused in the config (paused = true); force-resume lifts that", a.Gate))
				return
			}
			m, err := h.opts.Resume(cfg, a.Gate, force)
			if err != nil {
				h.log.Printf("resume gate %s: %v", a.Gate, err)
				fail(w, r, http.StatusInternalServerError, prefixed("resume gate "+a.Gate, err))
				return
			}
			msg = m
			if msg == "" {
				msg = "resumed gate " + a.Gate
			}
		case actTrigger:
			// Through the gate, as cron-gate trigger: a paused gate's
			// run is skipped (no force from the page).
			m, err := h.opts.Trigger(cfg, a.Gate, h.who+fromAddr(r))
			if err != nil {
				h.log.Printf("run gate %s now: %v", a.Gate, err)
				fail(w, r, http.StatusConflict, prefixed("run gate "+a.Gate+" now", err))
				return
			}
			msg = m
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "gate": a.Gate, "message": oneLine(msg)})
	}
}

// prefixed puts what was being done before an error that does not say it.
func prefixed(what string, err error) string {
	if strings.Contains(err.Error(), what) {
		return err.Error()
	}
	return what + ": " + err.Error()
}

// fromAddr names the client for the pause's "who".
func fromAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || host == "" {
		return ""
	}
	return " from " + host
}
