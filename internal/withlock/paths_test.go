package withlock

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// refCR is the CR rule without early checks: the number of the first
// line of data that ends in a carriage return, 0 if none (or null).
func refCR(data []byte, null bool) int {
	if null {
		return 0
	}
	for i, l := range bytes.Split(data, []byte{'\n'}) {
		if bytes.HasSuffix(l, []byte{'\r'}) {
			return i + 1
		}
	}
	return 0
}

// wantCR checks err against the CR rule's refusal of line n, or, with a
// NUL in the data too, against either refusal (which comes first depends
// on how the reads cut the data).
func wantCR(t *testing.T, flag string, data []byte, n int, hasNUL bool, err error) {
	t.Helper()
	want := fmt.Sprintf("%s f: line %d ends in a carriage return", flag, n)
	if err == nil || !strings.HasPrefix(err.Error(), want) && !(hasNUL && strings.Contains(err.Error(), "holds a NUL byte")) {
		t.Fatalf("%q: %v; want %q...", data, err, want)
	}
}

// refScan is scanPaths without limits or early checks, for comparison:
// split on the separator, drop empty entries and exact duplicates.
func refScan(data []byte, null bool) (paths []string, hasNUL bool) {
	sep := byte('\n')
	if null {
		sep = 0
	} else if bytes.IndexByte(data, 0) >= 0 {
		return nil, true
	}
	seen := map[string]bool{}
	for _, e := range bytes.Split(data, []byte{sep}) {
		if len(e) > 0 && !seen[string(e)] {
			seen[string(e)] = true
			paths = append(paths, string(e))
		}
	}
	return paths, false
}

func TestScanPaths(t *testing.T) {
	cases := []struct {
		in   string
		null bool
		want []string
		err  string
	}{
		{"a\nb\n\n\na\nc", false, []string{"a", "b", "c"}, ""},
		{"a\r\n b \n", false, nil, "--paths-from f: line 1 ends in a carriage return (CRLF line ends?), which no path here is taken to end in: convert the list (sed 's/\\r$//'), or give it NUL-separated (-0)"},
		{"a\nb\r", false, nil, "--paths-from f: line 2 ends in a carriage return (CRLF line ends?), which no path here is taken to end in: convert the list (sed 's/\\r$//'), or give it NUL-separated (-0)"},
		{"a\rb\n b \n", false, []string{"a\rb", " b "}, ""},
		{"a\r\x00\r\x00", true, []string{"a\r", "\r"}, ""},
		{"a\x00b\x00\x00\x00a\x00x\ny", true, []string{"a", "b", "x\ny"}, ""},
		{"", false, nil, ""},
		{"a\nb\n\nc\x00d\n", false, nil, "--paths-from f: line 4 holds a NUL byte, which no path can (a NUL-separated list needs -0)"},
		{"ok\n" + strings.Repeat("x", MaxEntryBytes+1) + "\n", false, nil, "--paths-from f: line 2 is longer than 1 MiB"},
		{"\x00\x00" + strings.Repeat("x", MaxEntryBytes+1), true, nil, "--paths-from f: entry 3 is longer than 1 MiB"},
		{strings.Repeat("x", MaxEntryBytes) + "\n", false, []string{strings.Repeat("x", MaxEntryBytes)}, ""},
	}
	for _, c := range cases {
		// Byte by byte too: entries and runs cut across reads.
		for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
			got, err := scanPaths(r, "f", c.null)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Errorf("scanPaths(%.40q): %v, want error %q", c.in, err, c.err)
				}
				continue
			}
			if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("scanPaths(%.40q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		}
	}
}

// FuzzScanPaths holds scanPaths to the plain reference on any input, read
// in one go and in small pieces.
func FuzzScanPaths(f *testing.F) {
	f.Add([]byte("a\nb\n\na\n"), false)
	f.Add([]byte("a\x00\x00b\x00"), true)
	f.Add([]byte("x\x00y\n"), false)
	f.Add([]byte("a\r\nb\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, null bool) {
		want, hasNUL := refScan(data, null)
		cr := refCR(data, null)
		for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
			got, err := scanPaths(r, "f", null)
			if cr > 0 {
				wantCR(t, "--paths-from", data, cr, hasNUL, err)
				continue
			}
			if hasNUL {
				if err == nil || !strings.Contains(err.Error(), "holds a NUL byte") {
					t.Fatalf("NUL in line mode: %q %v", got, err)
				}
				continue
			}
			if err != nil || strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
				t.Fatalf("scanPaths(%q, %v) = %q, %v; want %q", data, null, got, err, want)
			}
		}
	})
}

// refSets is scanLists with split, without limits: entries split on the
// separator, a run of empty entries ends a set, duplicates dropped within
// a set, empty sets dropped.
func refSets(data []byte, null bool) [][]string {
	sep := byte('\n')
	if null {
		sep = 0
	}
	var sets [][]string
	var cur []string
	seen := map[string]bool{}
	for _, e := range bytes.Split(data, []byte{sep}) {
		switch {
		case len(e) == 0:
			if len(cur) > 0 {
				sets = append(sets, cur)
			}
			cur, seen = nil, map[string]bool{}
		case !seen[string(e)]:
			seen[string(e)] = true
			cur = append(cur, string(e))
		}
	}
	if len(cur) > 0 {
		sets = append(sets, cur)
	}
	return sets
}

func TestScanCandidates(t *testing.T) {
	cases := []struct {
		in   string
		null bool
		want string // sets joined by "|", paths by ","
	}{
		{"a\nb\n\nc\n", false, "a,b|c"},
		{"\n\na\n\n\n\nb\nb\na\n\n", false, "a|b,a"},
		{"a\nb\na\n\na\n", false, "a,b|a"},
		{"a\x00b\nc\x00\x00d\x00", true, "a,b\nc|d"},
		{"", false, ""},
		{"\n\n\n", false, ""},
		{"a\x00\r\x00\x00b\r\x00", true, "a,\r|b\r"},
	}
	for _, c := range cases {
		for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
			got, err := scanLists(r, "--candidates-from", "f", c.null, true)
			var parts []string
			for _, s := range got {
				parts = append(parts, strings.Join(s, ","))
			}
			if err != nil || strings.Join(parts, "|") != c.want {
				t.Errorf("scanLists(%q, split) = %q, %v; want %q", c.in, got, err, c.want)
			}
		}
	}
	// A "\r" line (CRLF) no longer joins two candidate sets: refused.
	if _, err := scanLists(strings.NewReader("a\n\r\nb\n"), "--candidates-from", "f", false, true); err == nil || !strings.HasPrefix(err.Error(), "--candidates-from f: line 2 ends in a carriage return") {
		t.Errorf("a CR line between two sets: %v, want line 2 refused", err)
	}
	_, err := scanLists(strings.NewReader("a\n\nb\x00"), "--candidates-from", "f", false, true)
	if err == nil || err.Error() != "--candidates-from f: line 3 holds a NUL byte, which no path can (a NUL-separated list needs -0)" {
		t.Errorf("NUL in line mode: %v", err)
	}
}

// FuzzScanCandidates holds scanLists with split (--candidates-from) to the
// plain reference on any input, read in one go and in small pieces.
func FuzzScanCandidates(f *testing.F) {
	f.Add([]byte("a\nb\n\nc\n"), false)
	f.Add([]byte("\x00a\x00\x00\x00b\x00a\x00"), true)
	f.Add([]byte("x\n\n\x00y\n"), false)
	f.Add([]byte("a\r\n\r\nb\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, null bool) {
		_, hasNUL := refScan(data, null)
		want := refSets(data, null)
		cr := refCR(data, null)
		for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
			got, err := scanLists(r, "--candidates-from", "f", null, true)
			if cr > 0 {
				wantCR(t, "--candidates-from", data, cr, hasNUL, err)
				continue
			}
			if hasNUL {
				if err == nil || !strings.Contains(err.Error(), "holds a NUL byte") {
					t.Fatalf("NUL in line mode: %q %v", got, err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("scanLists(%q, %v, split) = %q, %v; want %q", data, null, got, err, want)
			}
		}
	})
}
