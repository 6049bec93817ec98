//go:build linux

package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Attempts are Digest.Recent. Their JSON is compact, because every status
// read decodes them from the checkpoint and the dashboard sends them for
// every gate: an array of arrays, one per attempt, oldest first,
//
//	[[TIME, "OUTCOME", EXIT, DURATION_MS, "REASON"], ...]
//
// TIME is the attempt's time in seconds since the Unix epoch; EXIT
// is null when the attempt has no exit code; REASON is "" when there is
// none. Encoding and decoding are written by hand (no reflection); a value
// that is not of this shape is refused by UnmarshalJSON.
type Attempts []Attempt

// MarshalJSON implements json.Marshaler.
func (as Attempts) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 48*len(as)+2)
	b = append(b, '[')
	for i, a := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, a.Time.Unix(), 10)
		b = append(b, ',')
		b = appendString(b, a.Outcome)
		b = append(b, ',')
		if a.Exit == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, int64(*a.Exit), 10)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, a.DurationMS, 10)
		b = append(b, ',')
		b = appendString(b, a.Reason)
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// appendString appends s as a JSON string: as it is when it holds only
// printable ASCII but for quotes and backslashes (every outcome and
// reason cron-gate writes), else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

var errAttempts = errors.New("recent: not an array of [time, outcome, exit, duration_ms, reason]")

// UnmarshalJSON implements json.Unmarshaler.
func (as *Attempts) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*as = nil
		return nil
	}
	var raw [][]json.RawMessage
	if !fastAttempts(data, as) {
		if err := json.Unmarshal(data, &raw); err != nil {
			return errAttempts
		}
		out := make(Attempts, 0, len(raw))
		for _, r := range raw {
			var a Attempt
			var ms int64
			var exit *int
			if len(r) != 5 || json.Unmarshal(r[0], &ms) != nil || json.Unmarshal(r[1], &a.Outcome) != nil ||
				json.Unmarshal(r[2], &exit) != nil || json.Unmarshal(r[3], &a.DurationMS) != nil || json.Unmarshal(r[4], &a.Reason) != nil {
				return errAttempts
			}
			a.Time, a.Exit = time.Unix(ms, 0), exit
			out = append(out, a)
		}
		*as = out
	}
	return nil
}

// fastAttempts decodes the form MarshalJSON writes for plain strings (no
// escapes, no spaces); false for anything else, which UnmarshalJSON then
// decodes the slow way.
func fastAttempts(d []byte, as *Attempts) bool {
	if len(d) < 2 || d[0] != '[' || d[len(d)-1] != ']' {
		return false
	}
	d = d[1 : len(d)-1]
	out := make(Attempts, 0, RecentAttempts)
	exits := make([]int, 0, RecentAttempts) // one allocation for every Exit
	exitAt := func(e int) *int {
		if len(exits) == cap(exits) {
			exits = make([]int, 0, RecentAttempts)
		}
		exits = append(exits, e)
		return &exits[len(exits)-1]
	}
	for len(d) > 0 {
		if d[0] != '[' {
			return false
		}
		d = d[1:]
		var a Attempt
		var ms int64
		var ok bool
		if ms, d, ok = fastInt(d, ','); !ok {
			return false
		}
		if a.Outcome, d, ok = fastString(d, ','); !ok {
			return false
		}
		if len(d) >= 5 && string(d[:5]) == "null," {
			d = d[5:]
		} else {
			var e int64
			if e, d, ok = fastInt(d, ','); !ok {
				return false
			}
			a.Exit = exitAt(int(e))
		}
		if a.DurationMS, d, ok = fastInt(d, ','); !ok {
			return false
		}
		if a.Reason, d, ok = fastString(d, ']'); !ok {
			return false
		}
		a.Time = time.Unix(ms, 0)
		out = append(out, a)
		if len(d) > 0 {
			if d[0] != ',' {
				return false
			}
			d = d[1:]
			if len(d) == 0 {
				return false
			}
		}
	}
	*as = out
	return true
}

func fastInt(d []byte, end byte) (int64, []byte, bool) {
	i := 0
	for i < len(d) && d[i] != end {
		i++
	}
	if i == len(d) || i == 0 || i > 20 {
		return 0, d, false
	}
	n, err := strconv.ParseInt(string(d[:i]), 10, 64)
	return n, d[i+1:], err == nil
}

func fastString(d []byte, end byte) (string, []byte, bool) {
	if len(d) < 3 || d[0] != '"' {
		return "", d, false
	}
	i := 1
	for i < len(d) && d[i] != '"' {
		if d[i] == '\\' || d[i] < 0x20 {
			return "", d, false
		}
		i++
	}
	if i+1 >= len(d) || d[i+1] != end {
		return "", d, false
	}
	return intern(d[1:i]), d[i+2:], true
}

// intern returns the outcomes and reasons cron-gate writes without
// allocating a string for each.
func intern(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case OutcomeSuccess:
		return OutcomeSuccess
	case OutcomeFailure:
		return OutcomeFailure
	case OutcomeTimeout:
		return OutcomeTimeout
	case OutcomeSignal:
		return OutcomeSignal
	case OutcomeSkipped:
		return OutcomeSkipped
	case OutcomeError:
		return OutcomeError
	case OutcomeVanished:
		return OutcomeVanished
	case ReasonPaused:
		return ReasonPaused
	case ReasonLegacyLock:
		return ReasonLegacyLock
	case ReasonLegacyPidfile:
		return ReasonLegacyPidfile
	case ReasonBusy:
		return ReasonBusy
	case ReasonConfig:
		return ReasonConfig
	case ReasonState:
		return ReasonState
	case ReasonStart:
		return ReasonStart
	case ReasonCoordinatorDown:
		return ReasonCoordinatorDown
	case ReasonDone:
		return ReasonDone
	}
	return string(b)
}
