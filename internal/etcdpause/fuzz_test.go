package etcdpause

import (
	"errors"
	"testing"

	"github.com/crongate/crongate/internal/safetext"
)

// FuzzDecodePause: any value decodes to a pause or to an error that wraps
// ErrCorrupt and names the key; never a panic. An accepted value re-encodes
// to one that decodes to the same pause.
func FuzzDecodePause(f *testing.F) {
	for _, s := range []string{
		`{"by":"command","reason":"migration","since":"2026-11-29T09:10:30Z","until":"2026-11-29T10:10:30Z","who":"ops@web1"}`,
		`{}`, `null`, `[]`, `{"by":"config"}`, `{"until":"x"}`, ``, "\x00", `{"reason":"\ud800"}`,
		`{"since":"0001-01-01T00:00:00Z"}`, `{"until":"9999-12-31T23:59:59.999999999+14:00"}`,
		`{"reason":"Jan 1, 2025\u202e"}`, `{"who":"x\u001b[31m"}`, `{"reason":"\u0085"}`,
	} {
		f.Add([]byte(s))
	}
	const key = "/cron-gate/pauses/g"
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePause(key, data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if p.By != "command" {
			t.Fatalf("accepted a pause by %q", p.By)
		}
		if safetext.Check(p.Reason) != nil || safetext.Check(p.Who) != nil {
			t.Fatalf("accepted a pause with control or bidi characters: %+v", p)
		}
		again, err := EncodePause(p)
		if err != nil {
			// Times outside JSON's range (year > 9999) cannot be
			// written back; they were read, which is all a reader does.
			return
		}
		q, err := DecodePause(key, again)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", again, err)
		}
		if q.Reason != p.Reason || q.Who != p.Who || !q.Since.Equal(p.Since) || !q.Until.Equal(p.Until) {
			t.Fatalf("round trip changed %+v into %+v", p, q)
		}
		if _, err := decodeRecord("/cron-gate/resumed/g", data); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record error %v does not wrap ErrCorrupt", err)
		}
	})
}
