package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crongate/crongate/tests/testbin"
)

// TestDispatchSignalDefault: withlock execs a line for --backend etcd
// before it sets up any signal handling of its own, and hands over a clean
// state: the program it execs starts with no signal blocked, and with the
// signals withlock's caller ignored still ignored (nohup, or a shell's
// `trap "" INT`), as any program that execs does. The exec'd program is a
// stand-in for withlock-etcd (next to the copied withlock) that prints its
// masks from /proc. The window before the exec itself (TERM, INT, HUP kill;
// QUIT kills without a goroutine dump) is internal/runner's
// TestQuitBeforeNotify: a signal cannot be aimed into it from outside.
func TestDispatchSignalDefault(t *testing.T) {
	dir := t.TempDir()
	if err := testbin.CopyTo("withlock", dir); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\nexec grep -E '^Sig(Blk|Ign):' /proc/self/status\n"
	if err := os.WriteFile(filepath.Join(dir, "withlock-etcd"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	wl := filepath.Join(dir, "withlock")
	// What this test process ignores its children inherit (nohup, or a
	// runner that ignores HUP): the expected masks start from it.
	var inherited uint64
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:\t"); ok {
			if inherited, err = strconv.ParseUint(v, 16, 64); err != nil {
				t.Fatalf("/proc/self/status: %q: %v", l, err)
			}
		}
	}
	for _, c := range []struct {
		name, trap, ign string
	}{
		{"what the caller ignores", "", fmt.Sprintf("%016x", inherited)},
		{"HUP and INT ignored too", "trap '' HUP INT;", fmt.Sprintf("%016x", inherited|3)},
	} {
		out, err := exec.Command("sh", "-c", c.trap+` exec "$0" --backend etcd --paths a -- true`, wl).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		want := "SigBlk:\t0000000000000000\nSigIgn:\t" + c.ign + "\n"
		if string(out) != want {
			t.Errorf("%s: withlock-etcd started with\n%s\nwant\n%s", c.name, out, strings.TrimSpace(want))
		}
	}
}
