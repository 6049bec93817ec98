package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crongate/crongate/gate/journal"
	"github.com/crongate/crongate/internal/safetext"
)

// hostile is a run's detail as a hand-written journal (or a command's own
// error text) could hold it: a newline, a title escape, a colour and a
// right-to-left override.
const hostile = "boom\n\x1b]0;pwned\x07\x1b[31mred \u202e5202 ,1 naJ"

// unsafeIn reports whether s holds an unsafe character other than the line
// feeds that separate a body's lines.
func unsafeIn(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && safetext.Unsafe(r) })
}

// An alert and its recovery quoting a hostile detail: the title, body and
// detail every notifier gets (argv, environment, webhook JSON, stderr) and
// check.json hold it escaped; the body's own line breaks stay.
func TestAlertTextNeutralised(t *testing.T) {
	e := healthy(t, oneGate)
	e.record("job", journal.Record{Event: journal.EventEnd, Outcome: journal.OutcomeFailure, Exit: code(3), Started: e.clock.Now(), Detail: hostile})
	e.expect()
	e.clock.Advance(5 * time.Minute)
	msgs := e.run()
	if len(msgs) != 1 {
		t.Fatalf("messages %+v, want one alert", msgs)
	}
	m := msgs[0]
	for k, v := range map[string]string{"title": m.Title, "body": m.Body, "detail": m.Detail} {
		if unsafeIn(v) {
			t.Errorf("alert %s holds an unsafe character: %q", k, v)
		}
	}
	if !strings.Contains(m.Detail, `boom\n\x1b]0;pwned\a\x1b[31mred \u202e5202`) || strings.Count(m.Body, "\n") != 2 {
		t.Errorf("alert detail %q, body %q", m.Detail, m.Body)
	}
	if c := e.cond("job", CondFailed); c == nil || unsafeIn(c.Detail) {
		t.Errorf("check.json detail: %+v", c)
	}
	// The stderr notifier: one line, escaped.
	var b bytes.Buffer
	(&StderrNotifier{W: &b}).Notify(context.Background(), m)
	if out := strings.TrimSuffix(b.String(), "\n"); strings.Contains(out, "\n") || unsafeIn(out) {
		t.Errorf("stderr notifier wrote %q", b.String())
	}
	// The webhook body: the bytes are safe, the JSON still decodes.
	body, _ := json.Marshal(m)
	if !bytes.Equal(safetext.JSON(body), body) {
		t.Errorf("the message's JSON needed escaping: %s", body)
	}

	// A check.json written by hand (or by an older version) with a raw
	// detail: the recovery's "Was:" line is escaped.
	st, err := ReadState(e.cfg)
	if err != nil || st == nil {
		t.Fatal(err)
	}
	st.cond("job", CondFailed).Detail = hostile
	data, _ := json.Marshal(st)
	e.write("check.json", string(data))
	e.clock.Advance(5 * time.Minute)
	e.success("job")
	msgs = e.run()
	if len(msgs) != 1 || unsafeIn(msgs[0].Body) || !strings.Contains(msgs[0].Body, `Was: boom\n\x1b]0;pwned`) {
		t.Errorf("recovery %+v", msgs)
	}
}

// run runs one check and returns the messages delivered, whole.
func (e *env) run() []Message {
	e.t.Helper()
	if _, err := e.checker().Run(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	msgs := e.rec.msgs
	e.rec.msgs = nil
	return msgs
}
