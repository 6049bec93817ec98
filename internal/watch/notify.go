//go:build linux

package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/hcping"
	"github.com/crongate/crongate/internal/safetext"
)

// Message is what a notifier sends: one alert or recovery. It is also the
// webhook's JSON body (docs/watchdog.md, "Notifiers"). Its text holds no control or
// bidirectional character but the line feeds that separate Body's lines:
// the details it quotes are neutralised when they are observed
// (safetext.Line), and the webhook's JSON carries the rest escaped.
type Message struct {
	V         int       `json:"v"`
	Kind      string    `json:"kind"` // KindAlert or KindRecovery
	Gate      string    `json:"gate"`
	Condition string    `json:"condition"` // CondStale, CondFailed, CondUnscheduled, CondSkipping, CondOverrun
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Detail    string    `json:"detail,omitempty"`
	Output    string    `json:"output,omitempty"` // a failure alert: the run's last output lines (also in Body)
	Since     time.Time `json:"since"`            // first bad check
	Time      time.Time `json:"time"`             // this check
	Host      string    `json:"host,omitempty"`
}

// Notifier delivers messages.
type Notifier interface {
	// ID identifies the notifier in the state (who has had an alert):
	// its name if it has one, else its type and target.
	ID() string
	// Budget is the longest one Notify may take, attempts included; the
	// check abandons it after that.
	Budget() time.Duration
	// Notify delivers m or says why not. It must return when ctx ends.
	Notify(ctx context.Context, m Message) error
}

// Notifiers builds the notifiers of the config's [[notify]] tables; with
// none, one that writes to stderr (cron mails it).
func Notifiers(cfg *gate.Config, stderr io.Writer) []Notifier {
	if len(cfg.Notify) == 0 {
		return []Notifier{&StderrNotifier{W: stderr}}
	}
	var out []Notifier
	for _, n := range cfg.Notify {
		switch n.Type {
		case gate.NotifyCommand:
			out = append(out, &CommandNotifier{Name: n.Name, Argv: n.Argv, Timeout: n.Timeout, Retries: n.Retries, Backoff: time.Second})
		case gate.NotifyWebhook:
			out = append(out, &WebhookNotifier{Name: n.Name, URL: n.URL, Timeout: n.Timeout, Retries: n.Retries, Backoff: time.Second})
		}
	}
	return out
}

func notifierID(name, kind string, target ...string) string {
	if name != "" {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(kind))
	for _, t := range target {
		h.Write([]byte{0})
		h.Write([]byte(t))
	}
	return fmt.Sprintf("%s-%08x", kind, h.Sum32())
}

// CommandNotifier runs a command per message: argv with the title and body
// appended as two arguments — or, if any argument contains {title},
// {body}, {gate}, {condition} or {kind}, with those replaced instead — and
// the message in the environment (CRON_GATE_ALERT_KIND, _GATE, _CONDITION,
// _TITLE, _BODY, _DETAIL, _SINCE, _HOST). Exit 0 is delivered. The command
// runs in a process group of its own, with stdin /dev/null; after Timeout
// the whole group is killed. A failure is tried again Retries times, after
// Backoff, 2×Backoff...
type CommandNotifier struct {
	Name    string
	Argv    []string
	Timeout time.Duration
	Retries int
	Backoff time.Duration
}

// ID implements Notifier.
func (c *CommandNotifier) ID() string {
	return notifierID(c.Name, "command", c.Argv...)
}

// Budget implements Notifier.
func (c *CommandNotifier) Budget() time.Duration {
	return budget(c.timeout(), c.Retries, c.Backoff)
}

// budget is the longest attempts with their backoffs can take, plus slack.
func budget(timeout time.Duration, retries int, backoff time.Duration) time.Duration {
	b := time.Duration(retries+1)*timeout + 2*time.Second
	for i := 1; i <= retries; i++ {
		b += time.Duration(i) * backoff
	}
	return b
}

func (c *CommandNotifier) timeout() time.Duration {
	if c.Timeout <= 0 {
		return gate.DefaultNotifyTimeout
	}
	return c.Timeout
}

// Notify implements Notifier.
func (c *CommandNotifier) Notify(ctx context.Context, m Message) error {
	argv := c.argv(m)
	var err error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 && !sleep(ctx, time.Duration(attempt)*c.Backoff) {
			break
		}
		if err = c.once(ctx, argv, m); err == nil || ctx.Err() != nil {
			break
		}
	}
	return err
}

func (c *CommandNotifier) argv(m Message) []string {
	r := strings.NewReplacer("{title}", m.Title, "{body}", m.Body, "{gate}", m.Gate, "{condition}", m.Condition, "{kind}", m.Kind)
	out := make([]string, len(c.Argv))
	templated := false
	for i, a := range c.Argv {
		out[i] = r.Replace(a)
		templated = templated || out[i] != a
	}
	if !templated {
		out = append(out, m.Title, m.Body)
	}
	return out
}

func (c *CommandNotifier) once(ctx context.Context, argv []string, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var out limitedBuffer
	out.max = 2 << 10
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(),
		"CRON_GATE_ALERT_KIND="+m.Kind,
		"CRON_GATE_ALERT_GATE="+m.Gate,
		"CRON_GATE_ALERT_CONDITION="+m.Condition,
		"CRON_GATE_ALERT_TITLE="+m.Title,
		"CRON_GATE_ALERT_BODY="+m.Body,
		"CRON_GATE_ALERT_DETAIL="+m.Detail,
		"CRON_GATE_ALERT_SINCE="+m.Since.UTC().Format(time.RFC3339),
		"CRON_GATE_ALERT_HOST="+m.Host,
	)
	killGroup(cmd)
	err := cmd.Run()
	name := filepath.Base(argv[0])
	if ctx.Err() != nil {
		return fmt.Errorf("%s did not finish within %v; its process group was killed", name, c.timeout())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		msg := fmt.Sprintf("%s: %v", name, ee)
		if l := firstLine(out.Bytes()); l != "" {
			msg += ": " + l
		}
		return errors.New(msg)
	}
	return err
}

// WebhookNotifier POSTs the Message as JSON (Content-Type
// application/json) to URL, through the proxy the environment names
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY; hcping.Post). A 2xx answer is
// delivered. A connection error, a timeout, 408, 429 or 5xx is tried
// again, Retries times, after Backoff, 2×Backoff...; any other answer is
// final, a redirect (3xx) too: it is not followed, and the error names
// where it points.
type WebhookNotifier struct {
	Name    string
	URL     string
	Timeout time.Duration
	Retries int
	Backoff time.Duration
}

// ID implements Notifier.
func (w *WebhookNotifier) ID() string { return notifierID(w.Name, "webhook", w.URL) }

// Budget implements Notifier.
func (w *WebhookNotifier) Budget() time.Duration {
	return budget(w.timeout(), w.Retries, w.Backoff)
}

func (w *WebhookNotifier) timeout() time.Duration {
	if w.Timeout <= 0 {
		return gate.DefaultNotifyTimeout
	}
	return w.Timeout
}

// Notify implements Notifier.
func (w *WebhookNotifier) Notify(ctx context.Context, m Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	body = safetext.JSON(body)
	for attempt := 0; ; attempt++ {
		var retry bool
		retry, err = w.once(ctx, body)
		if err == nil || !retry || attempt >= w.Retries || ctx.Err() != nil {
			if err != nil && attempt > 0 {
				err = fmt.Errorf("%v (after %d attempts)", err, attempt+1)
			}
			return err
		}
		if !sleep(ctx, time.Duration(attempt+1)*w.Backoff) {
			return fmt.Errorf("%v (then stopped: %v)", err, ctx.Err())
		}
	}
}

func (w *WebhookNotifier) once(ctx context.Context, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	resp, err := hcping.Post(ctx, w.URL, "application/json", body, nil)
	if err != nil {
		return true, fmt.Errorf("webhook %s: %v", redact(w.URL), err)
	}
	if resp.OK() {
		return false, nil
	}
	msg := fmt.Sprintf("webhook %s: HTTP %d %s", redact(w.URL), resp.Status, resp.Reason)
	if resp.Location != "" {
		msg += " (redirect to " + resp.Location + "; redirects are not followed)"
	}
	if b := strings.TrimSpace(resp.Body); b != "" {
		msg += ": " + firstLine([]byte(b))
	}
	return resp.Status == 408 || resp.Status == 429 || resp.Status >= 500, errors.New(msg)
}

// redact drops the user info and query of a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(bad URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	return u.String()
}

// StderrNotifier is used when no notifier is configured: it writes each
// message as one line to W (stderr, which cron mails).
type StderrNotifier struct{ W io.Writer }

// ID implements Notifier.
func (s *StderrNotifier) ID() string { return "stderr" }

// Budget implements Notifier.
func (s *StderrNotifier) Budget() time.Duration { return 5 * time.Second }

// Notify implements Notifier.
func (s *StderrNotifier) Notify(ctx context.Context, m Message) error {
	w := s.W
	if w == nil {
		w = os.Stderr
	}
	line := fmt.Sprintf("%s: %s: %s", m.Kind, strings.TrimPrefix(m.Title, "cron-gate: "), m.Body)
	line = safetext.Line(strings.NewReplacer("\n", " / ", "\r", " ").Replace(line))
	_, err := fmt.Fprintf(w, "cron-gate: %s\n", line)
	return err
}

// sleep waits d or until ctx ends, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
