//go:build linux

package lockset

import (
	"bytes"
	"testing"
)

func TestTicketIntersects(t *testing.T) {
	names := map[string]bool{"b.lock": true}
	for _, c := range []struct {
		data string
		want bool
	}{
		{"a.lock\nb.lock\n", true},
		{"b.lock", true},
		{"a.lock\nbb.lock\n", false},
		{"", false},
		{"\n\n", false},
		{"xb.lock\n", false},
	} {
		if got := ticketIntersects([]byte(c.data), names); got != c.want {
			t.Errorf("ticketIntersects(%q) = %v, want %v", c.data, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"t-00000000000000000012-4242", 4242, true},
		{"t-x", 0, false},
		{"t-1-", 0, false},
		{"t-1--0", 0, false},
		{"nodash", 0, false},
	} {
		if pid, ok := ticketPID(c.name); pid != c.pid || ok != c.ok {
			t.Errorf("ticketPID(%q) = %d, %v; want %d, %v", c.name, pid, ok, c.pid, c.ok)
		}
	}
}

// FuzzTicket holds the ticket reader (a ticket is outside input: any user
// who can write the queue dir can plant one) to a plain reference: a line
// equal to one of our (non-empty) names intersects, nothing else does;
// no name panics the PID reader or gives a PID below 1.
func FuzzTicket(f *testing.F) {
	f.Add([]byte("a.lock\nb.lock\n"), "b.lock", "t-01-7")
	f.Add([]byte("\x00\n\n"), "", "t--")
	f.Fuzz(func(t *testing.T, data []byte, name, ticket string) {
		if name == "" {
			return // lock file names are never empty
		}
		want := false
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if string(l) == name {
				want = true
			}
		}
		if got := ticketIntersects(data, map[string]bool{name: true}); got != want {
			t.Fatalf("ticketIntersects(%q, %q) = %v, want %v", data, name, got, want)
		}
		if pid, ok := ticketPID(ticket); ok && pid <= 0 {
			t.Fatalf("ticketPID(%q) = %d, ok", ticket, pid)
		}
	})
}
