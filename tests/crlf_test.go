package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One rule for a CR at the end of a line (issue 32, item 6), the same for
// --paths-from, --candidates-from and who --paths-from: the list is
// refused (125) with the line's number, the command never runs, and with
// -0 a CR is part of a name. Before, the CR was part of the path (another
// lock than the one named), and a "\r" line joined two candidate sets.
func TestCRLineEnds(t *testing.T) {
	dir := t.TempDir()
	locks := filepath.Join(dir, "locks")
	ran := filepath.Join(dir, "ran")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	paths := write("paths", a+"\n"+b+"\r\n")
	cands := write("cands", a+"\n\r\n"+b+"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--lock-dir", locks, "--paths-from", paths, "--", "touch", ran}, "withlock: --paths-from " + paths + ": line 2 ends in a carriage return"},
		{[]string{"--lock-dir", locks, "--first-of", "--candidates-from", cands, "--", "touch", ran}, "withlock: --candidates-from " + cands + ": line 2 ends in a carriage return"},
		{[]string{"who", "--lock-dir", locks, "--paths-from", paths}, "withlock: who: --paths-from " + paths + ": line 2 ends in a carriage return"},
	} {
		code, out := withlockCode(c.args...)
		if code != 125 || !strings.HasPrefix(out, c.want) {
			t.Errorf("withlock %s: exit %d, output %q; want 125 and %q...", strings.Join(c.args, " "), code, out, c.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Errorf("withlock %s ran its command", strings.Join(c.args, " "))
			os.Remove(ran)
		}
	}
	// With -0, a CR is part of a name, as any byte but NUL is.
	null := write("null", a+"\r\x00")
	if code, out := withlockCode("--lock-dir", locks, "-0", "--paths-from", null, "--", "touch", ran); code != 0 {
		t.Errorf("withlock -0 --paths-from with a name ending in CR: exit %d, want 0; output:\n%s", code, out)
	}
}
