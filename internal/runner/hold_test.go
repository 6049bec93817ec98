//go:build linux

package runner

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// tagged records, in one sequence, what reaches each destination, so that
// the order across stdout and stderr can be checked.
type tagged struct {
	seq *[]string
	tag string
}

func (t tagged) Write(p []byte) (int, error) {
	*t.seq = append(*t.seq, t.tag+string(p))
	return len(p), nil
}

// joined merges consecutive pieces of one destination: a replay may write
// a chunk in several pieces, never out of order.
func joined(seq []string) []string {
	var out []string
	for _, s := range seq {
		if n := len(out); n > 0 && out[n-1][0] == s[0] {
			out[n-1] += s[1:]
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestHeldOrderAndSpill writes chunks to both streams, past the memory
// bound (so into the spill file), and checks that a shown Held writes
// them out whole and in the order they came, and a dropped one nothing.
func TestHeldOrderAndSpill(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, size := range []int{10, HoldMemory / 2, 3 * HoldMemory} {
		for _, show := range []bool{true, false} {
			var got []string
			h := NewHeld(tagged{&got, "1"}, tagged{&got, "2"}, false)
			var want []string
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			for written := 0; written < size; {
				tag := "1"
				w := h.Stdout()
				if rng.IntN(3) == 0 {
					tag, w = "2", h.Stderr()
				}
				chunk := strings.Repeat(fmt.Sprintf("%d.", written), 1+rng.IntN(400))
				if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
					t.Fatalf("write: %d, %v", n, err)
				}
				want = append(want, tag+chunk)
				written += len(chunk)
			}
			if len(got) != 0 {
				t.Fatalf("size %d: %d pieces written out before Release", size, len(got))
			}
			if size > HoldMemory && h.spill == nil {
				t.Fatalf("size %d: past the memory bound and no spill file", size)
			}
			h.Release(show)
			if err := h.Passed(); err != nil {
				t.Fatalf("size %d: Passed = %v", size, err)
			}
			if !show {
				if len(got) != 0 {
					t.Fatalf("size %d: dropped, but %d pieces written out", size, len(got))
				}
				h.Stdout().Write([]byte("late"))
				if len(got) != 0 {
					t.Fatalf("size %d: output after a drop was written out", size)
				}
				continue
			}
			if g, w := joined(got), joined(want); !slices.Equal(g, w) {
				t.Fatalf("size %d: written out %d runs, want %d (first differing shown)\n%s", size, len(g), len(w), firstDiff(g, w))
			}
		}
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: got %.60q, want %.60q", i, a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// TestHeldPassesThrough: a spill file that cannot be made, and output past
// HoldMax, write out everything held at once, in order, and let the rest
// through as it comes; Passed says why.
func TestHeldPassesThrough(t *testing.T) {
	t.Run("no temporary dir", func(t *testing.T) {
		t.Setenv("TMPDIR", t.TempDir()+"/missing")
		var out bytes.Buffer
		h := NewHeld(&out, &out, false)
		first := bytes.Repeat([]byte("a"), HoldMemory-100)
		h.Stdout().Write(first)
		if out.Len() != 0 {
			t.Fatalf("held output written out under the memory bound")
		}
		h.Stderr().Write([]byte(strings.Repeat("b", 107)))
		if err := h.Passed(); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("Passed = %v, want the temporary dir's error", err)
		}
		h.Stdout().Write([]byte("c"))
		h.Release(false)
		want := string(first) + strings.Repeat("b", 107) + "c"
		if out.String() != want {
			t.Fatalf("written out %d bytes, want %d, in order", out.Len(), len(want))
		}
	})
	t.Run("past HoldMax", func(t *testing.T) {
		t.Setenv("TMPDIR", t.TempDir())
		var n int64
		h := NewHeld(countWriter{&n}, countWriter{&n}, false)
		chunk := make([]byte, 1<<20)
		for i := 0; i < HoldMax>>20+2; i++ {
			h.Stdout().Write(chunk)
		}
		if err := h.Passed(); err == nil || !strings.Contains(err.Error(), "MiB") {
			t.Fatalf("Passed = %v, want the bound", err)
		}
		if want := int64(HoldMax>>20+2) << 20; n != want {
			t.Fatalf("written out %d bytes, want all %d", n, want)
		}
		if entries, _ := os.ReadDir(os.Getenv("TMPDIR")); len(entries) != 0 {
			t.Fatalf("the spill file has a name: %v", entries)
		}
	})
}

type countWriter struct{ n *int64 }

func (c countWriter) Write(p []byte) (int, error) {
	*c.n += int64(len(p))
	return len(p), nil
}
