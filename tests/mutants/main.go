// Command mutants is the suite's mutation check: it applies, one at a
// time, each of a curated set of small deliberate bugs (list.go) to a
// private copy of the source tree, runs the tests that must catch that
// bug, and fails unless every one of them is caught.
//
//	go run ./tests/mutants              # every mutant (see RELIABILITY.md for the time)
//	go run ./tests/mutants -run 'etcd'  # the mutants whose name matches
//	go run ./tests/mutants -list        # the list, nothing run
//	go run ./tests/mutants -repeat 3    # each mutant's tests 3 times: flaky kills fail
//
// The working tree is never touched: the files git knows (tracked, and
// untracked ones that are not ignored) are copied into a temporary
// directory, and each mutant is applied there and undone after its run.
// Before any mutant, each distinct set of tests runs once on the unmutated
// copy: it must pass, run at least one test and skip none, or the check
// fails (a failing baseline is not mistaken for kills, a pattern that
// selects nothing is not mistaken for a test).
//
// Per mutant, one of:
//
//	killed            the tests failed: the suite catches this bug
//	killed (timeout)  the tests ran past their deadline; counted as
//	                  killed, but a test that fails instead of hanging is
//	                  better
//	SURVIVED          the tests passed: the suite has a hole (the check
//	                  fails); write the test that fails on the mutant
//	FLAKY             with -repeat N, killed in some runs only (the check
//	                  fails): make the test reliable or pick a better one
//	NOT APPLIED       an edit's original text is not in the file exactly
//	                  once: the code moved, re-aim the mutant (the check
//	                  fails; TestMutantsApply says so in the ordinary suite)
//	BROKEN            the mutated tree does not build: fix the mutant
//	BASELINE          its tests fail, select nothing or skip unmutated
//
// The etcd mutants start the etcd suite's own cluster (tests/etcd; set
// ETCD_TEST_PORTS as for .ci/etcd.sh). The tests run without -race (the
// ordinary suite runs them with it), one go test at a time.
//
// Exit status: 0 when every selected mutant was killed, 1 otherwise, 2
// for a usage error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	// Long: the mutation check's one sequence: flags, copy of the tree, each mutant, report.
	var (
		pattern  = flag.String("run", "", "run only the mutants whose name matches this regular expression")
		list     = flag.Bool("list", false, "print the mutants and their tests, run nothing")
		keep     = flag.Bool("keep", false, "keep the copy of the tree (its path is printed)")
		verbose  = flag.Bool("v", false, "print the output of every test run, not only of surprises")
		repeat   = flag.Int("repeat", 1, "run each mutant's tests N times; a mutant killed in some runs only is FLAKY (the check fails)")
		baseline = flag.Bool("baseline", true, "run each set of tests unmutated first (-baseline=false only to iterate on a mutant)")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./tests/mutants [-run REGEX] [-list] [-keep] [-v]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *repeat < 1 {
		flag.Usage()
		return 2
	}
	var re *regexp.Regexp
	if *pattern != "" {
		var err error
		if re, err = regexp.Compile(*pattern); err != nil {
			fmt.Fprintf(os.Stderr, "mutants: -run: %v\n", err)
			return 2
		}
	}
	var sel []Mutant
	for _, m := range Mutants {
		if re == nil || re.MatchString(m.Name) {
			sel = append(sel, m)
		}
	}
	if len(sel) == 0 {
		fmt.Fprintf(os.Stderr, "mutants: no mutant matches %q (see -list)\n", *pattern)
		return 2
	}
	if *list {
		for _, m := range sel {
			fmt.Printf("%-28s %s\n%28s tests: %s\n", m.Name, m.Breaks, "", m.tests().String())
		}
		return 0
	}

	root, err := gitRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutants: %v\n", err)
		return 1
	}
	// Applicability first, on the real tree (read only): a mutant whose
	// text moved fails the check at once, before any time is spent.
	var problems []string
	for _, m := range sel {
		if err := m.check(root); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Printf("NOT APPLIED  %s\n", p)
		}
		fmt.Printf("mutants: %d of %d mutants no longer apply: re-aim them in tests/mutants/list.go at the code as it is now\n", len(problems), len(sel))
		return 1
	}

	tree, err := os.MkdirTemp("", "mutants-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutants: %v\n", err)
		return 1
	}
	if *keep {
		fmt.Printf("copy of the tree: %s\n", tree)
	} else {
		defer os.RemoveAll(tree)
	}
	n, err := copyTree(root, tree)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutants: copying the tree: %v\n", err)
		return 1
	}
	fmt.Printf("mutation check: %d mutants, %d files copied to %s\n", len(sel), n, tree)
	start := time.Now()

	// Baselines: every distinct set of tests once, unmutated.
	baseErr := map[string]string{}
	if *baseline {
		seen := map[string]bool{}
		for _, m := range sel {
			ts := m.tests()
			k := ts.String()
			if seen[k] {
				continue
			}
			seen[k] = true
			r := ts.run(tree)
			var why string
			switch {
			case r.buildFailed:
				why = "does not build"
			case r.timedOut:
				why = "timed out"
			case r.failed || r.exitErr != nil:
				why = "fails: " + r.firstFail()
			case r.passed == 0:
				why = "runs no test (the -run pattern selects nothing)"
			case len(r.skipped) > 0:
				why = "skips " + strings.Join(r.skipped, ", ")
			}
			status := "ok"
			if why != "" {
				status = "FAILED"
				baseErr[k] = why
			}
			fmt.Printf("baseline %-6s %6.1fs  %s (%d passed)\n", status, r.elapsed.Seconds(), k, r.passed)
			if why != "" || *verbose {
				if why != "" {
					fmt.Printf("    %s\n", why)
				}
				r.printTail(os.Stdout, 60)
			}
		}
	}

	type outcome struct {
		m       Mutant
		status  string
		by      string
		seconds float64
	}
	var results []outcome
	failed := 0
	for _, m := range sel {
		ts := m.tests()
		if why, bad := baseErr[ts.String()]; bad {
			results = append(results, outcome{m, "BASELINE", why, 0})
			fmt.Printf("%-17s %6s  %-28s its tests %s unmutated\n", "BASELINE", "-", m.Name, why)
			failed++
			continue
		}
		undo, err := m.apply(tree)
		if err != nil {
			results = append(results, outcome{m, "NOT APPLIED", err.Error(), 0})
			fmt.Printf("%-17s %6s  %s\n", "NOT APPLIED", "-", err)
			failed++
			continue
		}
		var status, by string
		var secs float64
		killed := 0
		for i := 0; i < *repeat; i++ {
			r := ts.run(tree)
			secs += r.elapsed.Seconds()
			var st, b string
			switch {
			case r.buildFailed:
				st, b = "BROKEN", "the mutated tree does not build"
			case r.timedOut:
				st, b = "killed (timeout)", "ran past "+ts.timeout().String()
			case r.failed || r.exitErr != nil:
				st, b = "killed", "by "+r.firstFail()
			default:
				st, b = "SURVIVED", fmt.Sprintf("%d tests passed", r.passed)
			}
			if strings.HasPrefix(st, "killed") {
				killed++
			}
			// The first run's verdict, unless a later one is worse.
			if i == 0 || !strings.HasPrefix(st, "killed") && strings.HasPrefix(status, "killed") {
				status, by = st, b
			}
			if st == "BROKEN" || st == "SURVIVED" || *verbose {
				r.printTail(os.Stdout, 60)
			}
			if st == "BROKEN" {
				break
			}
		}
		if err := undo(); err != nil {
			fmt.Fprintf(os.Stderr, "mutants: undoing %s: %v\n", m.Name, err)
			return 1
		}
		if *repeat > 1 && killed > 0 && killed < *repeat {
			status, by = "FLAKY", fmt.Sprintf("killed in %d of %d runs only (%s)", killed, *repeat, by)
		} else if *repeat > 1 {
			by += fmt.Sprintf(" (%d of %d runs)", killed, *repeat)
		}
		if !strings.HasPrefix(status, "killed") {
			failed++
		}
		results = append(results, outcome{m, status, by, secs})
		fmt.Printf("%-17s %6.1fs  %-28s %s  [%s]\n", status, secs, m.Name, by, ts.String())
	}

	counts := map[string]int{}
	for _, r := range results {
		counts[r.status]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	fmt.Printf("mutation check: %d mutants: %s; %s in all\n", len(results), strings.Join(parts, ", "), time.Since(start).Round(time.Second))
	if failed > 0 {
		fmt.Printf("mutation check FAILED: %d mutants not killed; a survivor is a hole in the suite: add the test that catches it\n", failed)
		return 1
	}
	fmt.Println("mutation check passed: every mutant was killed")
	return 0
}

// gitRoot is the top of the working tree the command runs in.
func gitRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git working tree (git rev-parse: %v)", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// copyTree copies the files git knows in root (tracked, and untracked
// ones that are not ignored, as they are in the working tree) into dst,
// keeping modes and symlinks. Tracked files deleted from the working tree
// are left out.
func copyTree(root, dst string) (int, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("git ls-files: %v", err)
	}
	n := 0
	seen := map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return n, err
		}
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return n, err
			}
			if err := os.Symlink(target, to); err != nil {
				return n, err
			}
		case st.Mode().IsRegular():
			data, err := os.ReadFile(src)
			if err != nil {
				return n, err
			}
			if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
				return n, err
			}
		default:
			continue // a submodule or other oddity: not source
		}
		n++
	}
	return n, nil
}

// check reports whether every edit of m applies to the files under root:
// its original text occurs exactly once.
func (m Mutant) check(root string) error {
	for _, e := range m.Edits {
		data, err := os.ReadFile(filepath.Join(root, e.File))
		if err != nil {
			return fmt.Errorf("%s: %v", m.Name, err)
		}
		if _, err := e.applyTo(data); err != nil {
			return fmt.Errorf("%s: %s: %v", m.Name, e.File, err)
		}
	}
	return nil
}

// applyTo returns data with the edit made, or why it cannot be.
func (e Edit) applyTo(data []byte) ([]byte, error) {
	switch c := bytes.Count(data, []byte(e.Old)); c {
	case 1:
		return bytes.Replace(data, []byte(e.Old), []byte(e.New), 1), nil
	case 0:
		return nil, fmt.Errorf("the original text is not there any more: %q", short(e.Old))
	default:
		return nil, fmt.Errorf("the original text occurs %d times, not once: %q", c, short(e.Old))
	}
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// apply makes m's edits in the tree and returns the function that undoes
// them (restores every file it changed). On error nothing is left changed.
func (m Mutant) apply(tree string) (func() error, error) {
	orig := map[string][]byte{}
	var order []string
	undo := func() error {
		var first error
		for _, f := range order {
			if err := os.WriteFile(filepath.Join(tree, f), orig[f], 0o644); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, e := range m.Edits {
		p := filepath.Join(tree, e.File)
		data, err := os.ReadFile(p)
		if err != nil {
			undo()
			return nil, fmt.Errorf("%s: %v", m.Name, err)
		}
		if _, ok := orig[e.File]; !ok {
			orig[e.File] = data
			order = append(order, e.File)
		}
		out, err := e.applyTo(data)
		if err != nil {
			undo()
			return nil, fmt.Errorf("%s: %s: %v", m.Name, e.File, err)
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			undo()
			return nil, fmt.Errorf("%s: %v", m.Name, err)
		}
	}
	return undo, nil
}

// testSet is one `go test` invocation.
type testSet struct {
	pkgs    []string
	pattern string
	tags    string
	env     []string
	limit   time.Duration
}

func (m Mutant) tests() testSet {
	return testSet{pkgs: m.Pkgs, pattern: m.Run, tags: m.Tags, env: m.Env, limit: m.Timeout}
}

func (ts testSet) timeout() time.Duration {
	if ts.limit > 0 {
		return ts.limit
	}
	return 5 * time.Minute
}

// String is how the set is shown, and its identity for baselines.
func (ts testSet) String() string {
	var b strings.Builder
	for _, e := range ts.env {
		b.WriteString(e + " ")
	}
	b.WriteString("go test")
	if ts.tags != "" {
		b.WriteString(" -tags " + ts.tags)
	}
	b.WriteString(" -run '" + ts.pattern + "' " + strings.Join(ts.pkgs, " "))
	return b.String()
}

// result is what one `go test -json` run showed.
type result struct {
	elapsed     time.Duration
	passed      int
	failedTests []string
	skipped     []string
	failed      bool // a test or a package failed
	buildFailed bool
	timedOut    bool
	exitErr     error
	output      []string // every output line, for the tail
}

func (r *result) firstFail() string {
	if len(r.failedTests) > 0 {
		return r.failedTests[0]
	}
	if r.exitErr != nil {
		return "a package failing outside any test (" + r.exitErr.Error() + ")"
	}
	return "a package failing outside any test"
}

func (r *result) printTail(w io.Writer, n int) {
	lines := r.output
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		fmt.Fprintf(w, "    | %s", l)
		if !strings.HasSuffix(l, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// run runs the set in tree: go test -count=1 -json, the set's own
// -timeout, and a hard deadline a few minutes later (building included)
// at which the whole process group is killed.
func (ts testSet) run(tree string) *result {
	args := []string{"test", "-count=1", "-json", "-timeout", ts.timeout().String()}
	if ts.tags != "" {
		args = append(args, "-tags", ts.tags)
	}
	args = append(args, "-run", ts.pattern)
	args = append(args, ts.pkgs...)
	ctx, cancel := context.WithTimeout(context.Background(), ts.timeout()+3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), ts.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	r := &result{}
	start := time.Now()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		r.exitErr = err
		return r
	}
	r.parse(stdout)
	r.exitErr = cmd.Wait()
	r.elapsed = time.Since(start)
	if ctx.Err() != nil {
		r.timedOut = true
	}
	if s := stderr.String(); s != "" {
		r.output = append(r.output, strings.SplitAfter(s, "\n")...)
		if strings.Contains(s, "[setup failed]") || strings.Contains(s, "[build failed]") {
			r.buildFailed = true
		}
	}
	return r
}

// testEvent is one line of go test -json.
type testEvent struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

func (r *result) parse(rd io.Reader) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	final := map[string]string{}
	var order []string
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			r.output = append(r.output, sc.Text()+"\n")
			continue
		}
		switch ev.Action {
		case "build-output":
			r.output = append(r.output, ev.Output)
		case "build-fail":
			r.buildFailed = true
		case "output":
			r.output = append(r.output, ev.Output)
			if strings.Contains(ev.Output, "panic: test timed out after") {
				r.timedOut = true
			}
			if strings.HasPrefix(ev.Output, "FAIL") && strings.Contains(ev.Output, "[build failed]") {
				r.buildFailed = true
			}
		case "pass", "fail", "skip":
			if ev.Test == "" {
				if ev.Action == "fail" {
					r.failed = true
				}
				continue
			}
			k := ev.Package + " " + ev.Test
			if _, ok := final[k]; !ok {
				order = append(order, k)
			}
			final[k] = ev.Action
		}
	}
	for _, k := range order {
		name := k[strings.IndexByte(k, ' ')+1:]
		switch final[k] {
		case "pass":
			r.passed++
		case "skip":
			r.skipped = append(r.skipped, name)
		case "fail":
			r.failed = true
			r.failedTests = append(r.failedTests, name)
		}
	}
	// The deepest failing test says most: a parent fails with its child.
	sort.SliceStable(r.failedTests, func(i, j int) bool {
		return strings.Count(r.failedTests[i], "/") > strings.Count(r.failedTests[j], "/")
	})
}
