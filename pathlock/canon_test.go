package pathlock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Korean names in NFC and NFD; both forms are created as distinct files.
const (
	canonKoDirNFC  = "\uae00"                                                                                                                                                                                                                                                                            // 글
	canonKoDirNFD  = "\u1100\u1173\u11af"                                                                                                                                                                                                                                                                // 글 (decomposed)
	canonKoFileNFC = "\ubc88\uc5ed.md"                                                                                                                                                                                                                                                                   // 번역.md
	canonKoFileNFD = "\u1107\u1165\u11ab\u110b\u1167\u11a8.md"                                                                                                                                                                                                                                           // 번역.md (decomposed)
	canonLongName  = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" // > NAME_MAX
	canonLongChain = 45                                                                                                                                                                                                                                                                                  // > the kernel's 40 symlink limit
)

// canonBuildTree creates the test file tree under a new temporary directory and
// returns its physical root. The working directory for relative paths is
// root+"/work".
func canonBuildTree(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := root + "/work"
	mkdir := func(p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) {
		t.Helper()
		mkdir(filepath.Dir(p))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, name string) {
		t.Helper()
		mkdir(filepath.Dir(name))
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	touch(w + "/a/b/c/file.txt")
	mkdir(w + "/dir/sub")
	touch(w + "/with space/file")
	touch(w + "/comma,name")
	touch(w + "/new\nline/f")
	touch(w + "/" + canonKoDirNFC + "/" + canonKoFileNFC)
	touch(w + "/" + canonKoDirNFD + "/" + canonKoFileNFD)
	touch(w + "/" + canonKoDirNFC + "/" + canonKoFileNFD)
	mkdir(root + "/outside/target")

	ln("a/b", w+"/lrel")                     // relative target
	ln(w+"/a/b", w+"/labs")                  // absolute target
	ln("chain2", w+"/chain1")                // chain of links
	ln("chain3", w+"/chain2")                //
	ln("a/b/c", w+"/chain3")                 //
	ln("dir/sub", w+"/ldir")                 // ldir/.. is dir (physical)
	ln("nothere/x", w+"/dangling")           // dangling
	ln("a/b///", w+"/ltrail")                // target with trailing slashes
	ln("a/./b/", w+"/ltrail2")               // target with '.' and trailing slash
	ln("loopb", w+"/loopa")                  // loop a -> b -> a
	ln("loopa", w+"/loopb")                  //
	ln("self", w+"/self")                    // self loop
	ln("loopy", w+"/a/loopx")                // loop in the middle of a path
	ln("loopx", w+"/a/loopy")                //
	ln("loopa//x", w+"/q")                   // realpath quirk: '//' after a loop
	ln("loopa/./y", w+"/q2")                 // loop with rest in the target
	ln("self/..", w+"/selfup")               // loop removed lexically
	ln("lselfup/../a", w+"/lselfup")         // self loop, rest of the target removes it
	ln("ly/../a/b", w+"/lx")                 // two-link loop, rests remove it
	ln("lx/../dir", w+"/ly")                 //
	ln("lslash//tmp", w+"/lslash")           // rest "/tmp" is absolute: result /tmp
	ln("..", w+"/up")                        // relative parent
	ln("../..", w+"/upup")                   //
	ln(".", w+"/dotlink")                    // link to its own directory
	ln("a/b/c/file.txt", w+"/lfile")         // link to a regular file
	ln("/", w+"/labsroot")                   // link to /
	ln("/"+w+"/a", w+"/ldd")                 // target starting with '//'
	ln("../work/a", w+"/lparent")            //
	ln("missing/../a", w+"/lmissingparent")  // lexical '..' inside a target
	ln("../outside/target", w+"/lout")       //
	ln("lrel/../../lrel", w+"/lcache")       // hits the `seen` cache
	ln("ldir/../sub/../../lrel", w+"/lmix")  //
	ln(canonKoDirNFC, w+"/lko")              // non-ASCII target
	ln(w+"/"+canonKoDirNFD+"/", w+"/lkoabs") //
	ln("with space", w+"/lspace")            //
	ln("dangling/../a", w+"/ldangup")        //
	ln(canonLongName, w+"/llong")            // target component > NAME_MAX
	ln("work/dir", root+"/cwdlink")          // used as a logical working directory
	for i := range canonLongChain {
		target := fmt.Sprintf("long%d", i+1)
		if i == canonLongChain-1 {
			target = "a/b"
		}
		ln(target, fmt.Sprintf("%s/long%d", w, i))
	}
	return root
}

// canonCorpusRel are paths relative to root+"/work" (or absolute ones).
var canonCorpusRel = []string{
	"", ".", "..", "../..", "./", "./.", ".//.", "a", "a/", "a//b", "a/./b", "a/b/", "a/b//", "a///b////c",
	"a/b/../b/c", "a/b/c/file.txt", "a/b/c/file.txt/", "a/b/c/file.txt/x", "a/b/c/file.txt/..",
	"lrel", "lrel/", "lrel/c", "lrel/../b", "lrel/..", "lrel/../..", "labs", "labs/c/file.txt", "labs/..",
	"chain1", "chain1/file.txt", "chain1/..", "chain2/../../b",
	"ldir", "ldir/..", "ldir/../sub", "ldir/../../a",
	"dangling", "dangling/", "dangling/y", "dangling/..", "dangling/../..",
	"ltrail", "ltrail/c", "ltrail/..", "ltrail2/c",
	"loopa", "loopb", "loopa/", "loopa/x", "loopa/..", "loopa/../a", "loopa/x/..", "loopa/x/../..", "loopa/./x/../../b",
	"self", "self/", "self/x", "self/..", "self/x/..", "self/x/../..", "selfup", "selfup/a",
	"a/loopx/c", "a/loopx", "a/loopy/..", "a/loopx/../b", "a/loopx/c/../../b",
	"q", "q/z", "q/..", "q2", "q2/z", "q2/../..",
	"lselfup", "lselfup/c", "lselfup/..", "lx", "lx/c", "ly", "ly/sub", "lslash", "lslash/x", "a/../lslash",
	"up", "up/work/a", "up/up", "upup", "upup/x", "dotlink", "dotlink/dotlink/a", "dotlink/..",
	"long0", "long0/c", "long0/..", fmt.Sprintf("long%d/c", canonLongChain-1),
	"lfile", "lfile/", "lfile/x", "lfile/..", "labsroot", "labsroot/tmp", "labsroot/..", "ldd", "ldd/b", "ldd/..",
	"lparent/b", "lmissingparent", "lmissingparent/b", "lout", "lout/..", "lout/../..", "lcache", "lcache/c", "lmix",
	"lrel/../../lrel/c", "lko", "lko/" + canonKoFileNFC, "lkoabs", "lspace/file", "ldangup", "llong", "llong/..",
	"missing", "missing/", "missing/deeper/file", "missing/../a", "missing/../lrel/x", "missing/../link/x",
	"missing/..", "missing/../..", "missing/../../work/lrel", "../work/lrel", "../outside/target/../..",
	"../cwdlink", "../cwdlink/..", "../cwdlink/sub",
	"with space", "with space/file", "with space/../with space", "comma,name", "comma,name/..",
	"new\nline", "new\nline/f", "new\nline/..",
	canonKoDirNFC, canonKoDirNFD, canonKoDirNFC + "/" + canonKoFileNFC, canonKoDirNFD + "/" + canonKoFileNFD, canonKoDirNFC + "/" + canonKoFileNFD,
	canonKoDirNFD + "/" + canonKoFileNFC, canonKoDirNFC + "/../" + canonKoDirNFD, "\u00e9t\u00e9", "e\u0301te\u0301", "\U0001F600/x",
	"a/b/c/../../../../..", "../../../../../../../../../../../../../../..", "...", "a/.../b", ".hidden", "a/..b", "a/b..",
	"..a/../b", "-", "~", "~/x", "*", "a\\b", "a:b", "trailing//", "x//y///z",
	canonLongName, canonLongName + "/..", canonLongName + "/../a", "a/" + canonLongName + "/../../lrel",
	strings.Repeat("a/", 2100) + "b", strings.Repeat("../", 1500) + "work", strings.Repeat("lrel/../", 700) + "a",
	"/", "//", "///", "////", "/.", "//.", "/..", "//..", "///..", "/../..", "/tmp", "//tmp", "///tmp", "/tmp/", "/tmp/../tmp",
	"//tmp/..", "/proc/../nonexistent-pathlock", "//nonexistent-pathlock/x", "///nonexistent-pathlock/../y",
	"a\x00b", "\x00", "loopa/\x00",
}

// canonCorpus expands canonCorpusRel with absolute, '//'-prefixed and '///'-prefixed
// spellings of every relative entry.
func canonCorpus(root string) []string {
	w := root + "/work"
	var out []string
	for _, r := range canonCorpusRel {
		out = append(out, r)
		if strings.HasPrefix(r, "/") {
			continue
		}
		abs := w + "/" + r
		out = append(out, abs, "/"+abs, "//"+abs, w+"//"+r, w+"/./"+r)
	}
	// Relative spellings longer than PATH_MAX whose absolute form is short:
	// lstat fails with ENAMETOOLONG, so Python does not see the symlinks
	// (it returns "lrel" unresolved), but its final stat() does see a loop.
	up := strings.Repeat("../", 1400) + root[1:] + "/work/"
	for _, r := range []string{"lrel", "lrel/c", "self", "loopa/x", "loopa/..", "a/loopx/c", "chain1", "missing/x", "lfile/x"} {
		out = append(out, up+r)
	}
	return out
}

// canonRandomCorpus returns n pseudo-random paths built from names of the tree,
// for differential testing against Python (deterministic).
func canonRandomCorpus(root string, n int) []string {
	tokens := []string{
		"a", "b", "c", "file.txt", "dir", "sub", "lrel", "labs", "chain1", "chain3", "ldir", "dangling", "ltrail",
		"loopa", "loopb", "self", "q", "q2", "selfup", "up", "upup", "dotlink", "lfile", "ldd", "lparent",
		"lmissingparent", "lcache", "lmix", "missing", "..", "..", "..", ".", "", canonKoDirNFC, "lko", "long0", "llong",
		"work", "lout", "loopx", "loopy", "ldangup", "lselfup", "lx", "ly", "lslash",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 0, n)
	for range n {
		var b strings.Builder
		switch rng.IntN(6) {
		case 0:
			b.WriteString(root + "/work/")
		case 1:
			b.WriteString("/" + root + "/")
		case 2:
			b.WriteString(root + "//work/a/")
		}
		for k := range 1 + rng.IntN(7) {
			if k > 0 {
				b.WriteString(strings.Repeat("/", 1+rng.IntN(2)))
			}
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		if rng.IntN(5) == 0 {
			b.WriteString("/")
		}
		out = append(out, b.String())
	}
	return out
}

type canonPyRecord struct {
	Path      *string  `json:"path"`
	Set       *int     `json:"set"`
	Canonical any      `json:"canonical"` // string for a path, []string for a set
	LockName  string   `json:"lockname"`
	LockNames []string `json:"locknames"`
	Error     string   `json:"error"`
}

// canonPython returns the python3 interpreter to use, skipping the test
// when it is unavailable (or not 3.11) unless $CI is set, where that fails.
func canonPython(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format+" (CI is set, refusing to skip)", args...)
		}
		t.Skipf(format, args...)
	}
	py := os.Getenv("PYRULE_PYTHON")
	if py == "" {
		var err error
		if py, err = exec.LookPath("python3"); err != nil {
			unavailable("python3 not found: %v", err)
		}
	}
	out, err := exec.Command(py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		unavailable("running %s: %v", py, err)
	}
	if v := strings.TrimSpace(string(out)); v != "3.11" {
		unavailable("%s is Python %s, the rule is defined by Python 3.11", py, v)
	}
	return py
}

// canonPyRuleScript is the absolute path of the reference implementation,
// computed before any test changes the working directory.
var canonPyRuleScript = func() string {
	p, err := filepath.Abs("../tests/pyrule/pyrule.py")
	if err != nil {
		panic(err)
	}
	return p
}()

// canonRunPyRule runs the Python reference once, in directory dir, over paths
// and sets.
func canonRunPyRule(t *testing.T, py, dir string, paths []string, sets [][]string) (map[int]canonPyRecord, map[int]canonPyRecord) {
	t.Helper()
	if sets == nil {
		sets = [][]string{}
	}
	in, err := json.Marshal(map[string]any{"paths": paths, "sets": sets})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, canonPyRuleScript)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyrule: %v\n%s", err, stderr.Bytes())
	}
	perPath, perSet := map[int]canonPyRecord{}, map[int]canonPyRecord{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	i := 0
	for sc.Scan() {
		var rec canonPyRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("pyrule output line %q: %v", sc.Text(), err)
		}
		switch {
		case rec.Set != nil:
			perSet[*rec.Set] = rec
		case rec.Path != nil:
			if *rec.Path != paths[i] {
				t.Fatalf("pyrule record %d is for %q, want %q", i, *rec.Path, paths[i])
			}
			perPath[i] = rec
			i++
		}
	}
	if len(perPath) != len(paths) || len(perSet) != len(sets) {
		t.Fatalf("pyrule returned %d path and %d set records, want %d and %d", len(perPath), len(perSet), len(paths), len(sets))
	}
	return perPath, perSet
}

// canonErrorKind maps a Go error to the Python exception class reported by pyrule.
func canonErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrSymlinkLoop):
		return "loop"
	case errors.Is(err, ErrNULByte):
		return "value"
	default:
		return "go:" + err.Error()
	}
}

// canonComparePaths checks Canonical and LockName against Python for every path
// and returns how many were compared and how many were errors.
func canonComparePaths(t *testing.T, paths []string, py map[int]canonPyRecord) (compared, errs int) {
	t.Helper()
	for i, p := range paths {
		want := py[i]
		got, err := Canonical(p)
		if want.Error != "" || err != nil {
			if canonErrorKind(err) != want.Error {
				t.Errorf("Canonical(%q) = %q, %v; python error %q", p, got, err, want.Error)
			} else if !strings.HasPrefix(err.Error(), fmt.Sprintf("canonicalise %q: ", p)) {
				t.Errorf("Canonical(%q) error %q does not name the path", p, err)
			}
			errs++
			continue
		}
		if got != want.Canonical {
			t.Errorf("Canonical(%q)\n got %q\nwant %q (python)", p, got, want.Canonical)
		}
		if ln := LockName(got); ln != want.LockName {
			t.Errorf("LockName(%q) = %q, python %q", got, ln, want.LockName)
		}
		compared++
	}
	return compared, errs
}

func canonCompareSets(t *testing.T, sets [][]string, py map[int]canonPyRecord) {
	t.Helper()
	for i, set := range sets {
		want := py[i]
		got, err := CanonicalSet(set)
		if want.Error != "" || err != nil {
			if canonErrorKind(err) != want.Error {
				t.Errorf("CanonicalSet(set %d) error %v, python error %q", i, err, want.Error)
			}
			continue
		}
		var wantPaths []string
		for _, c := range want.Canonical.([]any) {
			wantPaths = append(wantPaths, c.(string))
		}
		if got == nil || !slices.Equal(got, wantPaths) && !(len(got) == 0 && len(wantPaths) == 0) {
			t.Errorf("CanonicalSet(set %d of %d paths)\n got %q\nwant %q", i, len(set), got, wantPaths)
			continue
		}
		for j, c := range got {
			if ln := LockName(c); ln != want.LockNames[j] {
				t.Errorf("set %d: LockName(%q) = %q, python %q", i, c, ln, want.LockNames[j])
			}
		}
	}
}

// TestCanonicalMatchesPython compares Canonical, LockName and CanonicalSet
// byte for byte with the Python 3.11 rule (tests/pyrule/pyrule.py) over a
// corpus of tricky paths and a deterministic random corpus, from a physical
// working directory and from one entered through a symlink (where $PWD is
// the logical path and must be ignored).
func TestCanonicalMatchesPython(t *testing.T) {
	py := canonPython(t)
	root := canonBuildTree(t)
	for _, tc := range []struct{ name, cwd string }{
		{"cwd=work", root + "/work"},
		{"cwd=via-symlink", root + "/cwdlink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.cwd)
			if tc.name == "cwd=via-symlink" && os.Getenv("PWD") != tc.cwd {
				t.Fatalf("PWD = %q, want the logical %q", os.Getenv("PWD"), tc.cwd)
			}
			paths := append(canonCorpus(root), canonRandomCorpus(root, 3000)...)

			var ok, all []string
			for _, p := range paths {
				all = append(all, p)
				if _, err := Canonical(p); err == nil {
					ok = append(ok, p)
				}
			}
			shuffled := slices.Clone(ok)
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			sets := [][]string{
				ok,                                  // everything that resolves
				append(shuffled, ok[:len(ok)/2]...), // different order, duplicates
				{},                                  // empty
				{"a", "lrel/c", "a/b/c", "labs/c", "chain1", root + "/work/a", "a", "."},  // dedup after canonicalisation
				{canonKoDirNFC, canonKoDirNFD, canonKoDirNFC + "/", "./" + canonKoDirNFD}, // NFC and NFD stay distinct
				{"a", "self", "lrel"}, // loop inside a set
				{"a", "a\x00"},        // NUL inside a set
				all,
			}
			perPath, perSet := canonRunPyRule(t, py, tc.cwd, paths, sets)
			compared, errs := canonComparePaths(t, paths, perPath)
			canonCompareSets(t, sets, perSet)
			t.Logf("compared %d paths with python (%d resolved, %d errors on both sides), %d sets", len(paths), compared, errs, len(sets))
			if compared < len(paths)/2 || errs == 0 {
				t.Fatalf("corpus too degenerate: %d resolved, %d errors", compared, errs)
			}
		})
	}
}

// TestCanonicalSetMatchesCanonical checks, without Python, that the
// memoised CanonicalSet agrees with independent Canonical calls whatever the
// input order (the memo and prefix resumption depend on it).
func TestCanonicalSetMatchesCanonical(t *testing.T) {
	root := canonBuildTree(t)
	t.Chdir(root + "/work")
	var ok []string
	want := map[string]bool{}
	for _, p := range append(canonCorpus(root), canonRandomCorpus(root, 3000)...) {
		c, err := Canonical(p)
		if err == nil {
			ok = append(ok, p)
			want[c] = true
		} else if _, err2 := CanonicalSet([]string{"a", p, "b"}); canonErrorKind(err2) != canonErrorKind(err) {
			t.Errorf("CanonicalSet with %q: error %v, Canonical error %v", p, err2, err)
		}
	}
	wantSorted := slices.Sorted(maps.Keys(want))
	sorted := slices.Sorted(slices.Values(ok))
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	shuffled := slices.Clone(ok)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for name, in := range map[string][]string{"input": ok, "sorted": sorted, "reversed": reversed, "shuffled": shuffled, "doubled": append(slices.Clone(ok), ok...)} {
		got, err := CanonicalSet(in)
		if err != nil || !slices.Equal(got, wantSorted) {
			t.Errorf("%s order: CanonicalSet = %d paths, %v; want %d", name, len(got), err, len(wantSorted))
			for i := range min(len(got), len(wantSorted)) {
				if got[i] != wantSorted[i] {
					t.Errorf("first difference at %d: %q vs %q", i, got[i], wantSorted[i])
					break
				}
			}
		}
	}
}

// TestCanonicalSetsMatchesCanonicalSet checks that CanonicalSets, one memo
// for all the sets, gives what CanonicalSet gives for each set alone, and
// fails where the first failing set fails.
func TestCanonicalSetsMatchesCanonicalSet(t *testing.T) {
	root := canonBuildTree(t)
	t.Chdir(root + "/work")
	var ok, bad []string
	for _, p := range append(canonCorpus(root), canonRandomCorpus(root, 3000)...) {
		if _, err := Canonical(p); err == nil {
			ok = append(ok, p)
		} else {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		t.Fatal("the corpus has no path that fails")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var sets [][]string
	for rest := ok; len(rest) > 0; {
		n := min(rng.IntN(6), len(rest)) // empty sets too
		sets = append(sets, rest[:n])
		rest = rest[n:]
	}
	got, err := CanonicalSets(sets)
	if err != nil {
		t.Fatalf("CanonicalSets: %v", err)
	}
	if len(got) != len(sets) {
		t.Fatalf("CanonicalSets gave %d sets for %d", len(got), len(sets))
	}
	for i, set := range sets {
		want, err := CanonicalSet(set)
		if err != nil || !slices.Equal(got[i], want) {
			t.Errorf("set %d %q: CanonicalSets gave %q, CanonicalSet %q (%v)", i, set, got[i], want, err)
		}
	}
	for _, p := range bad[:min(len(bad), 20)] {
		at := rng.IntN(len(sets))
		with := slices.Clone(sets)
		with[at] = append(slices.Clone(with[at]), p)
		_, want := CanonicalSet(with[at])
		if got, err := CanonicalSets(with); got != nil || canonErrorKind(err) != canonErrorKind(want) || err.Error() != want.Error() {
			t.Errorf("a failing %q in set %d: CanonicalSets gave %d sets, error %v; want %v", p, at, len(got), err, want)
		}
	}
}

// TestCanonicalLexical checks literal expected values that do not depend on
// the file system (the directories used do not exist).
func TestCanonicalLexical(t *testing.T) {
	const nx = "/nonexistent-pathlock-7f3a"
	for _, tc := range []struct{ in, want string }{
		{"/", "/"},
		{"//", "/"},
		{"///", "/"},
		{"/.", "/"},
		{"/..", "/"},
		{"/../../..", "/"},
		{"//..", "/"},
		{nx, nx},
		{nx + "/", nx},
		{"/" + nx, nx}, // '//x': pathlib keeps '//', realpath drops it
		{"//" + nx, nx},
		{"//" + nx + "//a///b/", nx + "/a/b"},
		{nx + "/./a/.", nx + "/a"},
		{nx + "/a/../b", nx + "/b"},
		{nx + "/a/b/../../c", nx + "/c"},
		{nx + "/../x", "/x"},
		{nx + "/a/../../../../x", "/x"},
		{nx + "/...", nx + "/..."},
		{nx + "/a..b/..c/d..", nx + "/a..b/..c/d.."},
		{nx + "/" + canonKoDirNFC + "/" + canonKoFileNFD, nx + "/" + canonKoDirNFC + "/" + canonKoFileNFD},
		{nx + "/with space/a,b/new\nline", nx + "/with space/a,b/new\nline"},
		{nx + "/\xff\xfe/x", nx + "/\xff\xfe/x"}, // non-UTF-8 kept as raw bytes
	} {
		got, err := Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCanonicalRelativeLexical checks relative paths against an empty
// working directory whose physical path is known.
func TestCanonicalRelativeLexical(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	parent := filepath.Dir(dir)
	for _, tc := range []struct{ in, want string }{
		{"", dir},
		{".", dir},
		{"./", dir},
		{".//./", dir},
		{"x", dir + "/x"},
		{"x/", dir + "/x"},
		{"x/../y", dir + "/y"},
		{"x/./y//z/", dir + "/x/y/z"},
		{"x/../../y", parent + "/y"},
		{"..", parent},
		{"../" + filepath.Base(dir) + "/x", dir + "/x"},
		{strings.Repeat("../", 100), "/"},
		{strings.Repeat("../", 100) + "x", "/x"},
	} {
		got, err := Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalErrors(t *testing.T) {
	for _, p := range []string{"\x00", "a\x00b", "/x/\x00", "/nonexistent-pathlock/\x00/.."} {
		_, err := Canonical(p)
		if !errors.Is(err, ErrNULByte) || errors.Is(err, ErrSymlinkLoop) {
			t.Errorf("Canonical(%q) error = %v, want ErrNULByte", p, err)
		}
		if want := fmt.Sprintf("canonicalise %q: ", p); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Canonical(%q) error = %v, want prefix %q", p, err, want)
		}
		if got, err := CanonicalSet([]string{"/", p}); got != nil || !errors.Is(err, ErrNULByte) {
			t.Errorf("CanonicalSet with %q = %q, %v; want ErrNULByte", p, got, err)
		}
	}

	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"b", "a"}, {"a", "b"}, {"s", "s"}} {
		if err := os.Symlink(l[0], dir+"/"+l[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{dir + "/a", dir + "/b/x", dir + "/s", dir + "/s/", dir + "/a/x/.."} {
		got, err := Canonical(p)
		if !errors.Is(err, ErrSymlinkLoop) || !errors.Is(err, unix.ELOOP) {
			t.Errorf("Canonical(%q) = %q, %v; want ErrSymlinkLoop", p, got, err)
		}
		if want := fmt.Sprintf("canonicalise %q: ", p); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Canonical(%q) error = %v, want prefix %q", p, err, want)
		}
	}
	// Python quirk: the loop is dropped lexically and stat() succeeds.
	if got, err := Canonical(dir + "/s/.."); err != nil || got != dir {
		t.Errorf("Canonical(s/..) = %q, %v; want %q", got, err, dir)
	}
	if got, err := CanonicalSet([]string{dir, dir + "/s"}); got != nil || !errors.Is(err, ErrSymlinkLoop) {
		t.Errorf("CanonicalSet with a loop = %q, %v; want ErrSymlinkLoop", got, err)
	}
}

func TestCanonicalSetLexical(t *testing.T) {
	const nx = "/nonexistent-pathlock-7f3a"
	got, err := CanonicalSet([]string{
		nx + "/b", nx + "//a", nx + "/a/../b/", "//" + nx + "/" + canonKoDirNFD, nx + "/" + canonKoDirNFC,
		nx + "/B", nx + "/a/", nx + "/a b", nx + "/\u00e9", nx + "/e\u0301", nx + "/~", nx + "/\U0001F600",
	})
	want := []string{
		nx + "/B", nx + "/a", nx + "/a b", nx + "/b", nx + "/e\u0301", nx + "/~", nx + "/\u00e9",
		nx + "/\u1100\u1173\u11af", nx + "/\uae00", nx + "/\U0001F600",
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("CanonicalSet = %q, %v\nwant %q", got, err, want)
	}
	if got, err := CanonicalSet(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("CanonicalSet(nil) = %#v, %v; want empty non-nil", got, err)
	}
}

func TestCanonLockName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// python3 -c 'import hashlib; print(hashlib.sha256(S.encode("utf-8")).hexdigest() + ".lock")'
		{"/", "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1.lock"},
		{"/tmp/" + canonKoDirNFC + "/" + canonKoFileNFC, "4645c35036921cc496c227caea3a6f94c2e784123b94914715a07630dfed0c30.lock"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.lock"},
	} {
		if got := LockName(tc.in); got != tc.want {
			t.Errorf("LockName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCanonPathlibNormalise(t *testing.T) {
	// Expected values from python3.11 -c 'import pathlib; print(repr(str(pathlib.Path(P))))'.
	for _, tc := range []struct{ in, want string }{
		{"", "."}, {".", "."}, {"./", "."}, {"..", ".."}, {"./..", ".."}, {"a/./b", "a/b"}, {"a//b/", "a/b"},
		{"/", "/"}, {"//", "//"}, {"///", "/"}, {"////a", "/a"}, {"//a", "//a"}, {"//a/./", "//a"},
		{"///a//b", "/a/b"}, {"a/../b", "a/../b"}, {"/..", "/.."}, {"...", "..."}, {"a/.", "a"},
	} {
		got := string(canonPathlibNormalise(nil, tc.in))
		if got != tc.want {
			t.Errorf("pathlibNormalise(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if normal := canonPathlibNormal(tc.in); normal != (got == tc.in) {
			t.Errorf("pathlibNormal(%q) = %v, want %v", tc.in, normal, got == tc.in)
		}
	}
}

func TestCanonNormpath(t *testing.T) {
	// Expected values from python3.11 -c 'import posixpath; print(repr(posixpath.normpath(P)))'.
	for _, tc := range []struct{ in, want string }{
		{"", "."}, {".", "."}, {"/", "/"}, {"//", "//"}, {"///", "/"}, {"//a/../..", "//"}, {"///a/..", "/"},
		{"..", ".."}, {"../..", "../.."}, {"a/../..", ".."}, {"a/b/../../..", ".."}, {"../a/../b", "../b"},
		{"/../a", "/a"}, {"/a/b/../c/./d/", "/a/c/d"}, {"a//b", "a/b"}, {"//a//b", "//a/b"}, {"a/..", "."},
	} {
		got := string(canonNormpath([]byte("prefix"), []byte(tc.in)))
		if got != "prefix"+tc.want {
			t.Errorf("normpath(%q) = %q, want %q", tc.in, strings.TrimPrefix(got, "prefix"), tc.want)
		}
	}
}
