package pathlock

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzCanonical checks invariants of Canonical on arbitrary strings
// interpreted relative to a tree with symlinks (absolute inputs are rooted
// inside the tree, keeping their leading slashes).
func FuzzCanonical(f *testing.F) {
	root := canonBuildTree(f)
	f.Chdir(root + "/work")
	for _, s := range canonCorpusRel {
		f.Add(s)
	}
	f.Add(strings.Repeat("../", 1400) + root[1:] + "/work/lrel") // result is the unresolved symlink
	f.Add("selfup/up")                                           // a loop hidden by "..": realpath leaves the rest unresolved (CI fuzz find)
	for _, s := range []string{"//", "///x", "//a/b", "/./lrel", "q/..//x", "a/\xff\xfe/../lrel", "\x00", "self/x/../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := s
		if lead := len(s) - len(strings.TrimLeft(s, "/")); lead > 0 {
			p = s[:lead] + root[1:] + "/work/" + s[lead:]
		}
		if n := string(canonPathlibNormalise(nil, s)); canonPathlibNormal(s) != (n == s) {
			t.Fatalf("pathlibNormal(%q) = %v but str(Path) is %q", s, canonPathlibNormal(s), n)
		}
		var r canonResolver
		c, err := r.canonical(p)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("canonicalise %q: ", p)) {
				t.Fatalf("Canonical(%q): error %q does not name the path", p, err)
			}
			if strings.IndexByte(p, 0) >= 0 != errors.Is(err, ErrNULByte) {
				t.Fatalf("Canonical(%q): unexpected error %v", p, err)
			}
			if !errors.Is(err, ErrNULByte) && !errors.Is(err, ErrSymlinkLoop) {
				t.Fatalf("Canonical(%q): unexpected error %v", p, err)
			}
			return
		}
		// Python never returns a leading '//' here: realpath restarts at '/'.
		if !strings.HasPrefix(c, "/") || strings.Contains(c, "//") || strings.Contains(c, "/./") ||
			strings.Contains(c, "/../") || strings.HasSuffix(c, "/.") || strings.HasSuffix(c, "/..") ||
			(c != "/" && strings.HasSuffix(c, "/")) || strings.IndexByte(c, 0) >= 0 {
			t.Fatalf("Canonical(%q) = %q: not absolute and normalised", p, c)
		}
		if !canonPathlibNormal(c) || string(canonNormpath(nil, []byte(c))) != c {
			t.Fatalf("Canonical(%q) = %q: not in pathlib/normpath normal form", p, c)
		}
		// Idempotence. Not for spellings of PATH_MAX bytes or more: there
		// lstat fails with ENAMETOOLONG, so Python (and Canonical) leaves
		// symlinks unresolved that the shorter result then resolves. Nor
		// when the walk stopped at a symlink loop that a later ".." hid:
		// realpath then returns the rest unresolved ("selfup/up", with
		// selfup -> self/.. and self -> self, gives WORK/up, and up -> ..
		// resolves on a second pass), in Python exactly as here.
		if len(p) < unix.PathMax && !r.incomplete {
			c2, err := Canonical(c)
			if err != nil || c2 != c {
				t.Fatalf("Canonical(Canonical(%q)) = %q, %v; want %q", p, c2, err, c)
			}
			set, err := CanonicalSet([]string{p, c, p})
			if err != nil || len(set) != 1 || set[0] != c {
				t.Fatalf("CanonicalSet(%q, %q) = %q, %v", p, c, set, err)
			}
		}
		if n, err := Canonical(string(canonPathlibNormalise(nil, p))); err != nil || n != c {
			t.Fatalf("Canonical(str(Path(%q))) = %q, %v; want %q", p, n, err, c)
		}
		if ln := LockName(c); len(ln) != 69 || !strings.HasSuffix(ln, ".lock") {
			t.Fatalf("LockName(%q) = %q", c, ln)
		}
	})
}
