package withlock

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

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
		{"a\r\n b \n", false, []string{"a\r", " b "}, ""},
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
	f.Fuzz(func(t *testing.T, data []byte, null bool) {
		want, hasNUL := refScan(data, null)
		for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
			got, err := scanPaths(r, "f", null)
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
	f.Fuzz(func(t *testing.T, data []byte, null bool) {
		_, hasNUL := refScan(data, null)
		want := refSets(data, null)
		for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
			got, err := scanLists(r, "--candidates-from", "f", null, true)
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
