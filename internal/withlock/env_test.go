package withlock

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

func TestJSONPathsRoundTrip(t *testing.T) {
	paths := []string{"/a", `/q"uote\back`, "/new\nline", "/ko/글.md", "/bad\x84\xff", "/tab\t\x7f"}
	js := JSONPaths(paths)
	// Valid UTF-8 paths read back with Go's decoder.
	var back []string
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("not JSON: %s: %v", js, err)
	}
	for i := range paths {
		if i != 4 && back[i] != paths[i] {
			t.Errorf("path %d: %q != %q", i, back[i], paths[i])
		}
	}
	// Python's json.loads + os.fsencode restores the exact bytes.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed") // tests/all.sh fails a skip under CI
	}
	cmd := exec.Command(py, "-c", `import json,os,sys; sys.stdout.buffer.write(b"\0".join(os.fsencode(p) for p in json.loads(sys.stdin.read())))`)
	cmd.Stdin = strings.NewReader(string(js))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(string(out), "\x00"); strings.Join(got, "|") != strings.Join(paths, "|") {
		t.Fatalf("python read back %q, want %q", got, paths)
	}
}
