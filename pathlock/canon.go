//go:build linux

// Package pathlock computes lock-file names that are byte-for-byte identical
// to the ones computed by the Python 3.11 workers, which use the rule
//
//	def _canonical(paths):
//	    return tuple(sorted({Path(p).resolve(strict=False) for p in paths}, key=str))
//	name = hashlib.sha256(str(path).encode("utf-8")).hexdigest() + ".lock"
//
// Canonical is a literal port of CPython 3.11's pathlib.Path(p).resolve(strict=False),
// i.e. pathlib's string normalisation, posixpath.realpath (_joinrealpath +
// abspath + normpath) and the trailing os.stat() loop check, including
// their quirks:
//
//   - ".." is applied lexically to the prefix resolved so far, so "link/.."
//     is the parent of the link's target and "missing/.." is ".", while
//     leading ".." of a relative path are kept until the working directory
//     is prepended;
//   - any lstat error (ENOENT, ENOTDIR, EACCES, ENAMETOOLONG, ...) means
//     "not a symlink" and resolution simply carries on lexically;
//   - a symlink loop is not an error by itself: realpath stops and appends
//     the unresolved rest, and only a final stat() failing with ELOOP makes it
//     an error (so "loop/.." resolves fine to the loop's directory);
//   - when realpath gives up inside a symlink target that contains "//", the
//     rest of that target is joined as an absolute path (posixpath.join
//     semantics), exactly as Python does;
//   - chains of more than 40 symlinks are followed (Python does not use the
//     kernel's limit), there is no limit other than loop detection;
//   - a path spelled with PATH_MAX bytes or more (e.g. many leading "../")
//     makes lstat fail with ENAMETOOLONG, so its symlinks are not resolved
//     even if the final, shorter result names a symlink.
//
// Relative paths are resolved against the process's physical working
// directory (getcwd(2)), not $PWD, and lstat/readlink are issued with the
// same relative paths Python would use.
//
// Behaviour differs from Python only where Python cannot produce a lock name
// at all: paths containing a NUL byte are always rejected (Python raises
// ValueError, except in one contrived symlink-loop case where the NUL
// component is removed lexically), and paths or symlink targets that are not
// valid UTF-8 are processed and hashed as raw bytes (Python would fail to
// encode them). Python's RecursionError for symlink chains nested about a
// thousand levels deep is not reproduced either.
package pathlock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrSymlinkLoop is wrapped by the error Canonical and CanonicalSet return
// when Python's resolve() would raise RuntimeError("Symlink loop from ..."):
// the final stat() of the realpath result (or a readlink during resolution)
// failed with ELOOP. Test for it with errors.Is.
var ErrSymlinkLoop = errors.New("symlink loop")

// ErrNULByte is wrapped by the error Canonical and CanonicalSet return for a
// path that contains a NUL byte; such a path can never be passed to the
// kernel (Python raises ValueError). Test for it with errors.Is.
var ErrNULByte = errors.New("path contains a NUL byte")

// Canonical returns what Python 3.11's str(Path(p).resolve(strict=False))
// returns for p, byte for byte, given the same file system state and the
// same working directory.
//
// Guarantees: on success the result is an absolute, normalised path: it
// starts with exactly one '/', contains no empty, "." or ".." components and
// has no trailing slash (unless it is "/"). The empty string is accepted and
// means "." (the working directory), as in Python. Missing components are
// not an error. The result contains no NUL byte; it is valid UTF-8 whenever
// p and every symlink target followed are (otherwise the raw bytes are
// kept, see the package documentation). It names no symlink and goes
// through none, and Canonical(result) == result, unless Python's own quirks
// say otherwise: an lstat on the way failed with an error other than
// ENOENT/ENOTDIR (EACCES, or ENAMETOOLONG for spellings of PATH_MAX bytes
// or more), or a symlink loop was cancelled by a later ".." or by a "//"
// in a symlink target (see the package documentation).
//
// Errors: every error has the form `canonicalise "<p>": ...` and wraps
// ErrNULByte (p contains a NUL byte), ErrSymlinkLoop (Python would raise
// RuntimeError), or the underlying unix.Errno of a failing getcwd or
// readlink (Python would raise OSError).
//
// System calls: never more than Python makes (lstat per component, readlink
// per symlink, getcwd only if the resolved path is still relative, one final
// stat), and fewer where the outcome is already determined: a child of a
// component that lstat reported missing or not a directory is not lstat'ed
// (it cannot be a symlink), and the final stat is skipped when it provably
// cannot fail with ELOOP. The result equals Python's whenever the file
// system does not change during the call (if it does, Python's own result is
// racy too). Canonical is safe for concurrent use, but relative paths are
// only meaningful if the working directory does not change concurrently.
func Canonical(p string) (string, error) {
	var r canonResolver
	return r.canonical(p)
}

// CanonicalSet canonicalises every path with Canonical, drops duplicates
// (after canonicalisation) and sorts the result by bytes, which equals
// Python's str (code point) order for valid UTF-8. It therefore returns the
// elements of Python's
//
//	tuple(sorted({Path(p).resolve(strict=False) for p in paths}, key=str))
//
// as strings, in the same order. The result is a new slice (never nil, empty
// for no input) and paths is not modified.
//
// On error it returns nil and the error Canonical gives for the first
// failing path in input order, which is the path Python's set comprehension
// would raise for.
//
// For speed, one call reads the working directory at most once and
// memoises lstat and readlink results per distinct prefix, so every prefix
// shared by many paths costs one system call in total. The result equals
// Python's whenever the file system and the working directory do not change
// during the call; a concurrent change may be observed at a different
// moment than Python would observe it (Python's result is racy then, too).
func CanonicalSet(paths []string) ([]string, error) {
	var r canonResolver
	if len(paths) > 1 {
		r.memo = make(map[string]canonLstat)
	}
	return r.set(paths)
}

// CanonicalSets returns CanonicalSet of each of sets, in order, with one
// working directory read and one memo for them all: a prefix that paths of
// many sets share (the directory of a thousand candidate pairs) costs one
// system call in total, not one per set. The result equals calling
// CanonicalSet on each set whenever the file system and the working
// directory do not change during the call. On error it returns nil and the
// error of the first failing path, sets and paths taken in input order.
func CanonicalSets(sets [][]string) ([][]string, error) {
	r := canonResolver{memo: make(map[string]canonLstat)}
	out := make([][]string, len(sets))
	for i, s := range sets {
		cs, err := r.set(s)
		if err != nil {
			return nil, err
		}
		out[i] = cs
	}
	return out, nil
}

// set canonicalises paths with r, sorted and without duplicates.
func (r *canonResolver) set(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := r.canonical(p)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LockName returns hex(sha256(canonical)) + ".lock": 64 lower-case
// hexadecimal digits followed by ".lock", exactly Python's
// hashlib.sha256(str(path).encode("utf-8")).hexdigest() + ".lock" for a
// path whose str is canonical. The bytes of canonical are hashed as they
// are (no validation or normalisation); pass it the result of Canonical.
func LockName(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	var b [sha256.Size*2 + len(".lock")]byte
	hex.Encode(b[:], sum[:])
	copy(b[sha256.Size*2:], ".lock")
	return string(b[:])
}

// canonSeen is a value of Python's `seen` dict: resolved == false is None.
type canonSeen struct {
	path     string
	resolved bool
}

// Kinds of lstat results. Python only distinguishes "symlink" from
// "anything else, including any error"; the finer kinds let us avoid system
// calls whose outcome is already determined.
const (
	canonKindDir     uint8 = iota // exists, is a directory
	canonKindFile                 // exists, neither directory nor symlink: children fail with ENOTDIR
	canonKindLink                 // symlink
	canonKindMissing              // ENOENT or ENOTDIR: children fail the same way
	canonKindOdd                  // any other error (EACCES, ENAMETOOLONG, ELOOP, EIO, ...)
)

// canonTrail is the resolver state after a plain leading component.
type canonTrail struct {
	end       int // len(r.buf) == length of the input prefix
	dead, odd bool
}

// canonLstat is a memoised lstat (and readlink) result.
type canonLstat struct {
	kind       uint8
	haveTarget bool
	target     string
}

// canonResolver holds the state of one realpath computation plus buffers, the
// working directory and (for CanonicalSet) the lstat/readlink memo, which
// are reused across the paths of one call.
type canonResolver struct {
	buf     []byte               // Python's `path` variable in _joinrealpath
	tmp     []byte               // scratch for normalisation and abspath
	seen    map[string]canonSeen // Python's `seen`, allocated lazily
	cwd     string
	haveCwd bool
	linkBuf []byte

	memo map[string]canonLstat // nil: no memo (single Canonical call)
	// With a memo, the previous input (in pathlib form) and, for each of its
	// leading components that were plain non-symlinks, the state after it,
	// so that a following input sharing that prefix resumes there.
	prev   string
	trail  []canonTrail
	simple bool // r.buf is still a prefix of the input being recorded

	dead  bool // the current `path` cannot have children (its lstat said missing or non-directory)
	odd   bool // some lstat of this path failed with an error other than ENOENT/ENOTDIR
	depth int  // recursion depth of joinRealpath (0: the input path itself)

	incomplete bool // the last walk stopped at a symlink loop (Python's "ok" false)
}

func (r *canonResolver) canonical(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("canonicalise %q: %w", p, ErrNULByte)
	}
	if r.buf == nil {
		r.buf = make([]byte, 0, 256)
		r.tmp = make([]byte, 0, 256)
	}
	r.buf = r.buf[:0]
	r.dead, r.odd, r.depth = false, false, 0
	clear(r.seen)

	// Path(p): pathlib's lexical normalisation. os.fspath(Path) is str(Path).
	// It matters: realpath gives "/x" for "loop//x" but pathlib passes it
	// "loop/x".
	s := p
	if !canonPathlibNormal(p) {
		r.tmp = canonPathlibNormalise(r.tmp[:0], p)
		s = string(r.tmp) // must be a real string: r.tmp is reused below
	}

	// realpath: path, ok = _joinrealpath(filename[:0], filename, strict, {})
	ok, err := r.joinRealpath(r.resume(s))
	if err != nil {
		return "", fmt.Errorf("canonicalise %q: %w", p, err)
	}
	r.incomplete = !ok

	// return abspath(path)
	var abs []byte
	if len(r.buf) > 0 && r.buf[0] == '/' {
		abs = r.buf
	} else {
		if !r.haveCwd {
			cwd, err := unix.Getwd()
			if err != nil {
				return "", fmt.Errorf("canonicalise %q: getcwd: %w", p, err)
			}
			r.cwd, r.haveCwd = cwd, true
		}
		r.tmp = canonJoin(append(r.tmp[:0], r.cwd...), canonBytesString(r.buf))
		abs = r.tmp
	}
	var out string
	if ok && len(r.buf) > 0 && r.buf[0] == '/' {
		// normpath(abs) and str(Path(abs)) are abs itself: a finished
		// absolute realpath is "/" or "/" followed by non-empty names other
		// than "." and "..", joined by single slashes (names come from
		// partition on "/", "."/".." are never appended, split only cuts
		// names off, and seen/memo values are such paths, too).
		out = string(abs)
	} else {
		res := canonNormpath(make([]byte, 0, len(abs)), abs)
		// self._from_parts((s,)): a no-op on normpath output of an absolute
		// path, kept for literalness.
		if !canonPathlibNormal(canonBytesString(res)) {
			res = canonPathlibNormalise(nil, canonBytesString(res))
		}
		out = canonBytesString(res) // res is freshly allocated and never reused
	}

	// if not strict: try: p.stat() except OSError as e: check_eloop(e)
	//
	// The stat is skipped when its outcome cannot be ELOOP: realpath
	// finished (ok) and every lstat on the way either succeeded or failed
	// with ENOENT/ENOTDIR. Then every prefix of out was seen by lstat as a
	// non-symlink (the working directory is physical), or the kernel's walk
	// stops with ENOENT/ENOTDIR (or ENAMETOOLONG up front) before any
	// symlink, so stat(out) cannot follow a symlink. Any other lstat error
	// (e.g. ENAMETOOLONG on a long relative spelling whose absolute form is
	// short) or a loop forces the stat, exactly like Python.
	if !ok || r.odd {
		var st unix.Stat_t
		err := unix.Stat(out, &st)
		for err == unix.EINTR {
			err = unix.Stat(out, &st)
		}
		if err == unix.ELOOP {
			return "", fmt.Errorf("canonicalise %q: %w (stat %q: %w)", p, ErrSymlinkLoop, out, err)
		}
	}
	return out, nil
}

// joinRealpath is posixpath._joinrealpath. Python's `path` argument and
// result live in r.buf; rest is the `rest` argument. The boolean is Python's
// `ok`; errors are the OSErrors Python would let escape (readlink).
func (r *canonResolver) joinRealpath(rest string) (bool, error) {
	if len(rest) > 0 && rest[0] == '/' { // isabs(rest)
		rest = rest[1:]
		r.buf = append(r.buf[:0], '/')
		r.dead = false
	}
	for len(rest) > 0 {
		// name, _, rest = rest.partition(sep)
		var name string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		} else {
			name, rest = rest, ""
		}
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			if len(r.buf) > 0 {
				// path, name = split(path)
				i := canonLastSlash(r.buf) + 1
				isDotDot := canonBytesString(r.buf[i:]) == ".."
				r.buf = canonSplitHead(r.buf[:i])
				if isDotDot {
					r.buf = canonJoin(canonJoin(r.buf, ".."), "..")
				}
			} else {
				r.buf = append(r.buf, ".."...)
			}
			r.dead = false
			r.simple = false
			continue
		}
		parent := len(r.buf)
		r.buf = canonJoin(r.buf, name) // newpath = join(path, name)
		kind := canonKindMissing       // lstat(parent/name) fails like lstat(parent)
		if !r.dead {
			kind = r.lstat(r.depth == 0 && rest == "")
		}
		if kind != canonKindLink {
			// path = newpath
			r.dead = kind == canonKindMissing || kind == canonKindFile
			r.odd = r.odd || kind == canonKindOdd
			if r.simple && r.depth == 0 {
				r.trail = append(r.trail, canonTrail{end: len(r.buf), dead: r.dead, odd: r.odd})
			}
			continue
		}
		r.dead = false
		r.simple = false
		if e, ok := r.seen[string(r.buf)]; ok {
			if e.resolved {
				r.buf = append(r.buf[:0], e.path...)
				continue
			}
			// Symlink loop: return join(newpath, rest), False
			r.buf = canonJoin(r.buf, rest)
			return false, nil
		}
		newpath := string(r.buf)
		if r.seen == nil {
			r.seen = make(map[string]canonSeen)
		}
		r.seen[newpath] = canonSeen{}
		target, err := r.readlink(newpath)
		if err != nil {
			if err == unix.ELOOP {
				return false, fmt.Errorf("%w (readlink %q: %w)", ErrSymlinkLoop, newpath, err)
			}
			return false, fmt.Errorf("readlink %q: %w", newpath, err)
		}
		r.buf = r.buf[:parent]
		r.depth++
		ok, err := r.joinRealpath(target)
		r.depth--
		if err != nil {
			return false, err
		}
		r.dead = false
		if !ok {
			r.buf = canonJoin(r.buf, rest)
			return false, nil
		}
		r.seen[newpath] = canonSeen{path: string(r.buf), resolved: true}
	}
	return true, nil
}

// resume prepares r for resolving the pathlib-normal input s and returns
// the `rest` to pass to joinRealpath. Without a memo that is s itself. With
// one, if the previous input started with the same plain (non-symlink)
// components, r.buf and the flags are set to the state after them, which is
// what processing them again would yield with the memoised lstat results,
// and only the remainder of s is returned.
func (r *canonResolver) resume(s string) string {
	if r.memo == nil {
		return s
	}
	prev := r.prev
	r.prev = s
	r.simple = !strings.HasPrefix(s, "//") // realpath drops one slash of "//"
	if !r.simple {
		r.trail = r.trail[:0]
		return s
	}
	n := 0
	for n < len(s) && n < len(prev) && s[n] == prev[n] {
		n++
	}
	for i := len(r.trail) - 1; i >= 0; i-- {
		e := r.trail[i]
		if e.end > n || e.end < len(s) && s[e.end] != '/' {
			continue
		}
		r.trail = r.trail[:i+1]
		r.buf = append(r.buf[:0], s[:e.end]...)
		r.dead, r.odd = e.dead, e.odd
		if e.end == len(s) {
			return ""
		}
		return s[e.end+1:]
	}
	r.trail = r.trail[:0]
	return s
}

// lstat classifies lstat(r.buf), consulting and filling the memo if there
// is one. A final component of the input (leaf) is not memoised: it is
// rarely shared and would only cost an allocation.
func (r *canonResolver) lstat(leaf bool) uint8 {
	if r.memo != nil {
		if info, ok := r.memo[string(r.buf)]; ok {
			return info.kind
		}
	}
	var st unix.Stat_t
	path := canonBytesString(r.buf) // unix.Lstat copies it before the call
	err := unix.Lstat(path, &st)
	for err == unix.EINTR {
		err = unix.Lstat(path, &st)
	}
	var kind uint8
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		kind = canonKindMissing
	case err != nil:
		kind = canonKindOdd
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		kind = canonKindLink
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		kind = canonKindDir
	default:
		kind = canonKindFile
	}
	if r.memo != nil && (!leaf || kind == canonKindLink) {
		r.memo[string(r.buf)] = canonLstat{kind: kind}
	}
	return kind
}

// readlink returns the target of the symlink at path, consulting and
// filling the memo if there is one.
func (r *canonResolver) readlink(path string) (string, error) {
	if r.memo != nil {
		if info := r.memo[path]; info.haveTarget {
			return info.target, nil
		}
	}
	if r.linkBuf == nil {
		r.linkBuf = make([]byte, 256)
	}
	for {
		n, err := unix.Readlink(path, r.linkBuf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n < len(r.linkBuf) {
			target := string(r.linkBuf[:n])
			if r.memo != nil {
				r.memo[path] = canonLstat{kind: canonKindLink, haveTarget: true, target: target}
			}
			return target, nil
		}
		r.linkBuf = make([]byte, 2*len(r.linkBuf)) // possibly truncated
	}
}

// canonJoin is posixpath.join(path, b) with path held in dst.
func canonJoin(dst []byte, b string) []byte {
	switch {
	case len(b) > 0 && b[0] == '/':
		return append(dst[:0], b...)
	case len(dst) == 0 || dst[len(dst)-1] == '/':
		return append(dst, b...)
	default:
		return append(append(dst, '/'), b...)
	}
}

// canonSplitHead is the head normalisation of posixpath.split: strip trailing
// slashes from head unless head consists of slashes only.
func canonSplitHead(head []byte) []byte {
	n := len(head)
	for n > 0 && head[n-1] == '/' {
		n--
	}
	if n == 0 {
		return head
	}
	return head[:n]
}

func canonLastSlash(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			return i
		}
	}
	return -1
}

// canonNormpath appends posixpath.normpath(path) (CPython 3.11, POSIX) to dst.
func canonNormpath(dst, path []byte) []byte {
	if len(path) == 0 {
		return append(dst, '.')
	}
	initial := 0
	if path[0] == '/' {
		initial = 1
		if len(path) >= 2 && path[1] == '/' && (len(path) < 3 || path[2] != '/') {
			initial = 2
		}
	}
	start := len(dst)
	for range initial {
		dst = append(dst, '/')
	}
	base := len(dst) // start of the joined components
	last := base     // start of the last component in dst
	ncomps := 0
	for len(path) > 0 {
		var comp []byte
		if i := canonIndexSlash(path); i >= 0 {
			comp, path = path[:i], path[i+1:]
		} else {
			comp, path = path, nil
		}
		c := canonBytesString(comp)
		if c == "" || c == "." {
			continue
		}
		if c != ".." || (initial == 0 && ncomps == 0) || (ncomps > 0 && canonBytesString(dst[last:]) == "..") {
			if ncomps > 0 {
				dst = append(dst, '/')
			}
			last = len(dst)
			dst = append(dst, comp...)
			ncomps++
		} else if ncomps > 0 {
			// new_comps.pop()
			if last > base {
				dst = dst[:last-1]
			} else {
				dst = dst[:base]
			}
			last = base + canonLastSlash(dst[base:]) + 1
			ncomps--
		}
	}
	if len(dst) == start {
		dst = append(dst, '.')
	}
	return dst
}

func canonIndexSlash(b []byte) int {
	for i, c := range b {
		if c == '/' {
			return i
		}
	}
	return -1
}

// canonPathlibNormal reports whether str(Path(p)) == p, i.e. whether p is
// already in pathlib's normal form: at most two leading slashes, then no
// empty or "." component and no trailing slash.
func canonPathlibNormal(p string) bool {
	switch p {
	case "":
		return false // Path("") is "."
	case ".", "/", "//":
		return true
	}
	start := 0
	if p[0] == '/' {
		start = 1
		if p[1] == '/' {
			start = 2
		}
	}
	for i := start; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if n := i - start; n == 0 || n == 1 && p[start] == '.' {
			return false
		}
		start = i + 1
	}
	return true
}

// canonPathlibNormalise appends str(Path(p)) to dst: repeated slashes collapse,
// "." components and trailing slashes disappear, ".." is kept, exactly two
// leading slashes are kept (three or more become one), and "" becomes ".".
func canonPathlibNormalise(dst []byte, p string) []byte {
	start := len(dst)
	rest := p
	if len(p) > 0 && p[0] == '/' {
		stripped := strings.TrimLeft(p, "/")
		if len(p)-len(stripped) == 2 {
			dst = append(dst, "//"...)
		} else {
			dst = append(dst, '/')
		}
		rest = stripped
	}
	root := len(dst)
	for rest != "" {
		var comp string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			comp, rest = rest, ""
		}
		if comp == "" || comp == "." {
			continue
		}
		if len(dst) > root {
			dst = append(dst, '/')
		}
		dst = append(dst, comp...)
	}
	if len(dst) == start {
		dst = append(dst, '.')
	}
	return dst
}

// canonBytesString views b as a string without copying. The caller must not
// modify b while the string is in use.
func canonBytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
