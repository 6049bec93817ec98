package gateconf

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/safetext"

	"golang.org/x/sys/unix"
)

// editSetup writes content to a config file in a new directory and returns
// its path and a lock path.
func editSetup(t *testing.T, content string) (path, lock string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "state.lock")
}

// trustWritten records the config at path, as it is now, in the edit lock
// as the version the last edit wrote (what SetPaused does after its
// rename), so that the next edit takes it at once instead of waiting for
// it to be a second old.
func trustWritten(t *testing.T, path, lock string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	l, err := editLock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.record(gate.VersionOf(&st))
	l.release()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splitKeep splits s into lines, each keeping its line ending.
func splitKeep(s string) []string {
	return strings.SplitAfter(s, "\n")
}

// checkTokenEdit checks that after differs from before in exactly one line,
// and there only by the value token from -> to.
func checkTokenEdit(t *testing.T, before, after, from, to string) {
	t.Helper()
	b, a := splitKeep(before), splitKeep(after)
	if len(a) != len(b) {
		t.Fatalf("line count changed: %d -> %d\n%s", len(b), len(a), after)
	}
	changed := 0
	for i := range b {
		if a[i] == b[i] {
			continue
		}
		changed++
		k := strings.Index(b[i], "= "+from)
		if k < 0 || b[i][:k]+"= "+to+b[i][k+2+len(from):] != a[i] {
			t.Errorf("line %d changed beyond the token:\n- %q\n+ %q", i+1, b[i], a[i])
		}
	}
	if changed != 1 {
		t.Errorf("%d lines changed, want 1", changed)
	}
}

// checkInsert checks that after is before with exactly the line ins
// inserted as line number at (1-based).
func checkInsert(t *testing.T, before, after string, at int, ins string) {
	t.Helper()
	b, a := splitKeep(before), splitKeep(after)
	want := append(append(append([]string{}, b[:at-1]...), ins), b[at-1:]...)
	if strings.Join(want, "") != after {
		t.Errorf("insertion wrong:\nwant %q\ngot  %q", strings.Join(want, ""), strings.Join(a, ""))
	}
}

func mustLoad(t *testing.T, path string) *gate.Config {
	t.Helper()
	cfg, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestSetPausedCommented(t *testing.T) {
	orig, err := os.ReadFile("testdata/config/commented.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, crlf := range []bool{false, true} {
		t.Run(fmt.Sprintf("crlf=%v", crlf), func(t *testing.T) {
			t.Parallel() // each its own directory
			content := string(orig)
			eol := "\n"
			if crlf {
				content = strings.ReplaceAll(content, "\n", "\r\n")
				eol = "\r\n"
			}
			path, lock := editSetup(t, content)
			trustWritten(t, path, lock) // written as an edit would: no wait for it to settle

			// Existing `paused = true   # OPS-1234`: only the token changes.
			step := func(gname string, paused bool) (before, after string) {
				t.Helper()
				before = readString(t, path)
				if err := SetPaused(path, gname, paused, lock); err != nil {
					t.Fatalf("SetPaused(%s, %v): %v", gname, paused, err)
				}
				after = readString(t, path)
				if got := mustLoad(t, path).Gate(gname).Paused; got != paused {
					t.Fatalf("after SetPaused(%s, %v) the gate is paused=%v", gname, paused, got)
				}
				return before, after
			}
			b, a := step("backup", false)
			checkTokenEdit(t, b, a, "true", "false")
			b, a = step("backup", true)
			checkTokenEdit(t, b, a, "false", "true")
			if a != content {
				t.Errorf("round trip of backup did not restore the file")
			}

			// Indented, tab before the comment.
			b, a = step("report", true)
			checkTokenEdit(t, b, a, "false", "true")
			if !strings.Contains(a, "    paused = true\t# tab before this comment"+eol) {
				t.Errorf("indentation or comment lost:\n%s", a)
			}
			b, a = step("report", false)
			checkTokenEdit(t, b, a, "true", "false")
			if a != content {
				t.Errorf("round trip of report did not restore the file")
			}

			// No paused key: inserted after the spaced, quoted header
			// with its trailing comment.
			hdr := strings.Index(content, `[ gates . "db-vacuum.daily" ]`)
			hdrLine := strings.Count(content[:hdr], "\n") + 1
			b, a = step("db-vacuum.daily", true)
			checkInsert(t, b, a, hdrLine+1, "paused = true"+eol)
			if g := mustLoad(t, path).Gate("db-vacuum.daily"); g.PausedLine != hdrLine+1 || len(g.LegacyLocks) != 1 || g.LegacyLocks[0] != "/run/vacuum"+eol+"[gates.fake]"+eol+"paused = true"+eol {
				t.Errorf("db-vacuum.daily = %+v", g)
			}
			b, a = step("db-vacuum.daily", false)
			checkTokenEdit(t, b, a, "true", "false")

			// Literal-quoted header.
			cur := readString(t, path)
			hdr = strings.Index(cur, `[gates.'rotate-logs']`)
			hdrLine = strings.Count(cur[:hdr], "\n") + 1
			b, a = step("rotate-logs", true)
			checkInsert(t, b, a, hdrLine+1, "paused = true"+eol)

			// Empty table at the end of the file.
			b, a = step("noop", true)
			checkInsert(t, b, a, len(splitKeep(b)), "paused = true"+eol)

			// "fake" only exists inside a multi-line string: a real table
			// is appended, the string is untouched.
			b, a = step("fake", true)
			if a != b+eol+"[gates.fake]"+eol+"paused = true"+eol {
				t.Errorf("append wrong:\n%q", a[len(b)-20:])
			}
			cfg := mustLoad(t, path)
			if g := cfg.Gate("db-vacuum.daily"); len(g.LegacyLocks) != 1 || !strings.Contains(g.LegacyLocks[0], "[gates.fake]") {
				t.Errorf("multi-line string changed: %q", g.Reason)
			}
			b, a = step("fake", false)
			checkTokenEdit(t, b, a, "true", "false")

			// Setting the state a gate is in writes nothing.
			var st1, st2 unix.Stat_t
			if err := unix.Stat(path, &st1); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				gname  string
				paused bool
			}{{"backup", true}, {"report", false}, {"undeclared", false}, {"noop", true}} {
				if err := SetPaused(path, c.gname, c.paused, lock); err != nil {
					t.Fatalf("SetPaused(%s, %v): %v", c.gname, c.paused, err)
				}
			}
			if err := unix.Stat(path, &st2); err != nil {
				t.Fatal(err)
			}
			if st1.Ino != st2.Ino || st1.Mtim != st2.Mtim {
				t.Errorf("a no-op SetPaused rewrote the file")
			}

			// Every comment is still there, and no line ending changed.
			final := readString(t, path)
			for _, line := range splitKeep(content) {
				if i := strings.Index(line, "#"); i >= 0 && !strings.Contains(final, strings.TrimRight(line[i:], "\r\n")) {
					t.Errorf("comment lost: %q", line[i:])
				}
			}
			if crlf && strings.Count(final, "\n") != strings.Count(final, "\r\n") {
				t.Errorf("a bare LF crept into a CRLF file:\n%q", final)
			}
			if !crlf && strings.Contains(final, "\r") {
				t.Errorf("a CR crept into an LF file")
			}
		})
	}
}

func TestSetPausedHeaderForms(t *testing.T) {
	tests := []struct {
		name, src string
		gname     string
		want      string // after SetPaused(gate, true)
	}{
		{"quoted", "[gates.\"x\"]\nreason = \"r\"\n", "x", "[gates.\"x\"]\npaused = true\nreason = \"r\"\n"},
		{"spaces", "[ gates . x ]\n", "x", "[ gates . x ]\npaused = true\n"},
		{"tabs and comment", "\t[gates.x]\t# hi [gates.y]\n  interval = \"5m\"\n", "x", "\t[gates.x]\t# hi [gates.y]\n  paused = true\n  interval = \"5m\"\n"},
		{"comment no space", "[gates.x]#c\n", "x", "[gates.x]#c\npaused = true\n"},
		{"literal", "[gates.'x']\n", "x", "[gates.'x']\npaused = true\n"},
		{"escaped", "[gates.\"\\u0078\"]\n", "x", "[gates.\"\\u0078\"]\npaused = true\n"},
		{"no final newline", "[gates.x]", "x", "[gates.x]\npaused = true"},
		{"no final newline crlf", "history = 10\r\n[gates.x]", "x", "history = 10\r\n[gates.x]\r\npaused = true"},
		{"dotted name", "[gates.\"a.b\"]\n", "a.b", "[gates.\"a.b\"]\npaused = true\n"},
		{"value", "[gates.x]\npaused=false\n", "x", "[gates.x]\npaused=true\n"},
		{"quoted key", "[gates.x]\n\"paused\" = false # c\n", "x", "[gates.x]\n\"paused\" = true # c\n"},
		{"later table", "[gates.a]\n[gates.x]\n[gates.b]\npaused = false\n", "x", "[gates.a]\n[gates.x]\npaused = true\n[gates.b]\npaused = false\n"},
		{"other paused in a string", "[gates.x]\nlegacy_locks = [\"\"\"/r\npaused = false\n\"\"\"]\n", "x", "[gates.x]\npaused = true\nlegacy_locks = [\"\"\"/r\npaused = false\n\"\"\"]\n"},
		{"bracket in array", "[gates.x]\nlegacy_locks = [\n  \"/run/[gates.y]\", # ]\n]\n", "y",
			"[gates.x]\nlegacy_locks = [\n  \"/run/[gates.y]\", # ]\n]\n\n[gates.y]\npaused = true\n"},
		{"append empty", "", "x", "[gates.x]\npaused = true\n"},
		{"append no eol", "history = 10", "x", "history = 10\n\n[gates.x]\npaused = true\n"},
		{"append crlf", "# c\r\n", "x", "# c\r\n\r\n[gates.x]\r\npaused = true\r\n"},
		{"append dotted name", "", "a.b", "[gates.\"a.b\"]\npaused = true\n"},
		{"append after dotted top-level", "gates.a.paused = true\n", "x", "gates.a.paused = true\n\n[gates.x]\npaused = true\n"},
		{"append after date", "[gates.a]\nreason = \"x\"\n", "b", "[gates.a]\nreason = \"x\"\n\n[gates.b]\npaused = true\n"},
		{"bom", "\xef\xbb\xbf[gates.x]\n", "x", "\xef\xbb\xbf[gates.x]\npaused = true\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each its own directory; most of its time is waiting
			path, lock := editSetup(t, tt.src)
			trustWritten(t, path, lock) // written as an edit would: no wait for it to settle
			if err := SetPaused(path, tt.gname, true, lock); err != nil {
				t.Fatal(err)
			}
			if got := readString(t, path); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			if err := SetPaused(path, tt.gname, false, lock); err != nil {
				t.Fatal(err)
			}
			if mustLoad(t, path).Gate(tt.gname).Paused {
				t.Error("still paused after SetPaused(false)")
			}
		})
	}
}

func TestSetPausedRefuses(t *testing.T) {
	tests := []struct {
		name, src string
		gname     string
		paused    bool
		want      string // error substring; the file must not change
	}{
		{"inline table", "gates.x = {paused = true}\n", "x", false,
			"config PATH line 1: the paused setting of gate x is written as an inline table, which cron-gate cannot edit safely; edit it by hand"},
		{"inline table in gates", "[gates]\nx = { paused = true, reason = \"r\" }\n", "x", false,
			"config PATH line 2: the paused setting of gate x is written as an inline table"},
		{"multi-line inline table", "gates.x = {\n  reason = \"r\",\n  paused = true,\n}\n", "x", false,
			"config PATH line 3: the paused setting of gate x is written as part of a multi-line inline table"},
		{"dotted top level", "# c\ngates.x.paused = true\n", "x", false,
			"config PATH line 2: the paused setting of gate x is written as a dotted key (gates.x.paused)"},
		{"dotted in gates", "[gates]\nx.paused = true\n", "x", false,
			"config PATH line 2: the paused setting of gate x is written as a dotted key (x.paused)"},
		{"declared inline", "[gates]\nx = { reason = \"r\" }\n", "x", true,
			"config PATH line 2: gate x is declared as an inline table, which cron-gate cannot edit safely; add paused = true to it by hand"},
		{"declared dotted", "[gates]\n\nx.reason = \"r\"\n", "x", true,
			"config PATH line 3: gate x is declared as dotted keys (x.reason)"},
		{"gates inline", "gates = { a = { paused = true } }\n", "b", true,
			"config PATH line 1: gates is written as an inline table, which cron-gate cannot edit safely; add the gate with paused = true by hand"},
		{"invalid config", "[gates.x]\npausd = true\n", "x", true,
			"config PATH line 2: unknown key gates.x.pausd; did you mean paused? (cron-gate only edits a valid config: fix this by hand first)"},
		{"syntax error", "[gates.x\n", "x", true, "config PATH line 1: "},
		{"bad gate name", "", "pause", true, `config PATH: gate name "pause" is reserved for the pause subcommand; pick another`},
		{"bad gate name 2", "", "../x", true, `config PATH: gate name "../x" contains '/'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, lock := editSetup(t, tt.src)
			trustWritten(t, path, lock) // written as an edit would: no wait for it to settle
			err := SetPaused(path, tt.gname, tt.paused, lock)
			want := strings.ReplaceAll(tt.want, "PATH", path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v\nwant   %s", err, want)
			}
			if err != nil && strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if got := readString(t, path); got != tt.src {
				t.Errorf("file changed: %q", got)
			}
			ents, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range ents {
				if strings.Contains(e.Name(), ".cron-gate-") {
					t.Errorf("temporary file left: %s", e.Name())
				}
			}
		})
	}
}

func TestSetPausedFiles(t *testing.T) {
	t.Run("missing config", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "none.toml")
		err := SetPaused(p, "x", true, filepath.Join(dir, "l"))
		if err == nil || !strings.Contains(err.Error(), "file does not exist") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("no lock path", func(t *testing.T) {
		path, _ := editSetup(t, "")
		err := SetPaused(path, "x", true, "")
		if err == nil || !strings.Contains(err.Error(), "no lock file given") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("lock is a symlink", func(t *testing.T) {
		path, lock := editSetup(t, "")
		if err := os.Symlink(path, lock); err != nil {
			t.Fatal(err)
		}
		err := SetPaused(path, "x", true, lock)
		if err == nil || !strings.Contains(err.Error(), "lock file "+lock+": is a symlink, not a regular file") {
			t.Errorf("error = %v", err)
		}
		if readString(t, path) != "" {
			t.Error("config changed")
		}
	})
	t.Run("lock dir missing", func(t *testing.T) {
		path, lock := editSetup(t, "")
		err := SetPaused(path, "x", true, filepath.Join(lock, "sub", "l"))
		if err == nil || !strings.Contains(err.Error(), "directory does not exist") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("lock mode", func(t *testing.T) {
		path, lock := editSetup(t, "")
		if err := SetPaused(path, "x", true, lock); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(lock)
		if err != nil || fi.Mode() != 0o600 {
			t.Errorf("lock file %v, %v", fi.Mode(), err)
		}
	})
	t.Run("symlinked config", func(t *testing.T) {
		dir := t.TempDir()
		repo := filepath.Join(dir, "repo")
		etc := filepath.Join(dir, "etc")
		for _, d := range []string{repo, etc} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(repo, "config.toml")
		if err := os.WriteFile(target, []byte("# mine\n[gates.x]\npaused = false\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(etc, "config.toml")
		if err := os.Symlink("../repo/config.toml", link); err != nil {
			t.Fatal(err)
		}
		if err := SetPaused(link, "x", true, filepath.Join(dir, "lock")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("symlink replaced: %v %v", fi.Mode(), err)
		}
		if dest, _ := os.Readlink(link); dest != "../repo/config.toml" {
			t.Errorf("symlink now points to %q", dest)
		}
		if got := readString(t, target); got != "# mine\n[gates.x]\npaused = true\n" {
			t.Errorf("target = %q", got)
		}
		fi, err = os.Stat(target)
		if err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("target mode %v, %v", fi.Mode(), err)
		}
		ents, _ := os.ReadDir(repo)
		if len(ents) != 1 {
			t.Errorf("repo holds %d files, want 1", len(ents))
		}
	})
	t.Run("mode preserved", func(t *testing.T) {
		for _, mode := range []os.FileMode{0o600, 0o640, 0o444, 0o664} {
			path, lock := editSetup(t, "[gates.x]\n")
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			var before unix.Stat_t
			if err := unix.Stat(path, &before); err != nil {
				t.Fatal(err)
			}
			if err := SetPaused(path, "x", true, lock); err != nil {
				t.Fatal(err)
			}
			var after unix.Stat_t
			if err := unix.Stat(path, &after); err != nil {
				t.Fatal(err)
			}
			if after.Mode != before.Mode || after.Uid != before.Uid || after.Gid != before.Gid {
				t.Errorf("mode %o uid %d gid %d -> mode %o uid %d gid %d",
					before.Mode, before.Uid, before.Gid, after.Mode, after.Uid, after.Gid)
			}
			if after.Ino == before.Ino {
				t.Errorf("file not replaced (same inode)")
			}
		}
	})
}

// TestSetPausedEditRaced checks that the file is not replaced when it is no
// longer the one that was read, and that no temporary file is left.
func TestSetPausedEditRaced(t *testing.T) {
	path, _ := editSetup(t, "a")
	orig, st, err := gate.ReadConfigVersion(path, gate.FileVersion{})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := editLock(filepath.Join(t.TempDir(), "lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.release()
	if err := os.WriteFile(path, []byte("bb"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := editReplace("config "+path, path, orig, []byte("new"), st, lock); err != errEditRaced {
		t.Errorf("editReplace = %v, want errEditRaced", err)
	}
	if got := readString(t, path); got != "bb" {
		t.Errorf("file = %q", got)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d files, want 1", len(ents))
	}
}

func TestEditVerify(t *testing.T) {
	src := "[gates.x]\npaused = false\nreason = \"r\"\n"
	cfg, err := Parse("/c", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := editVerify("/c", []byte("[gates.x]\npaused = true\nreason = \"r\"\n"), cfg, "x", true); err != nil {
		t.Errorf("good edit refused: %v", err)
	}
	for out, want := range map[string]string{
		"[gates.x]\npaused = true\nreason = \"other\"\n":        "would have changed more than paused of gate x",
		"[gates.x]\npaused = false\nreason = \"r\"\n":           "did not set paused = true for gate x",
		"[gates.x]\npaused = true\nreason = 1\n":                "would make the file invalid",
		"[gates.x]\npaused = true\nreason = \"r\"\n[gates.y]\n": "would have changed more",
	} {
		err := editVerify("/c", []byte(out), cfg, "x", true)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "edit it by hand") {
			t.Errorf("editVerify(%q) = %v, want %q", out, err, want)
		}
	}
}

// TestSetPausedConcurrent toggles 20 gates of one file from 20 goroutines
// at once; every call opens and locks on its own.
func TestSetPausedConcurrent(t *testing.T) {
	const gates = 20
	const rounds = 6
	var src strings.Builder
	src.WriteString("# shared config\nstate_dir = \"/var/lib/cron-gate\" # keep\n")
	for i := range gates {
		fmt.Fprintf(&src, "\n# gate %d comment\n", i)
		switch i % 3 {
		case 0: // with a paused key
			fmt.Fprintf(&src, "[gates.g%d] # header %d\npaused = false  # value %d\n", i, i, i)
		case 1: // table without paused
			fmt.Fprintf(&src, "[gates.g%d]\nreason = \"r%d\" # reason %d\n", i, i, i)
		case 2: // not declared: appended on the first pause
			fmt.Fprintf(&src, "# g%d is not declared\n", i)
		}
	}
	path, lock := editSetup(t, src.String())
	trustWritten(t, path, lock)
	final := make([]bool, gates)
	var wg sync.WaitGroup
	errs := make(chan error, gates*rounds)
	for i := range gates {
		final[i] = rand.IntN(2) == 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Alternate, ending on final[i].
				p := (rounds-1-r)%2 == 0
				if !final[i] {
					p = !p
				}
				if err := SetPaused(path, fmt.Sprintf("g%d", i), p, lock); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cfg := mustLoad(t, path)
	for i := range gates {
		if got := cfg.Gate(fmt.Sprintf("g%d", i)).Paused; got != final[i] {
			t.Errorf("g%d paused = %v, want %v", i, got, final[i])
		}
	}
	out := readString(t, path)
	for _, line := range splitKeep(src.String()) {
		if i := strings.Index(line, "#"); i >= 0 && !strings.Contains(out, strings.TrimSuffix(line[i:], "\n")) {
			t.Errorf("comment lost: %q", line[i:])
		}
	}
	if n := strings.Count(out, "[gates."); n != gates {
		t.Errorf("%d gate tables, want %d:\n%s", n, gates, out)
	}
}

func FuzzEditPaused(f *testing.F) {
	for _, name := range []string{"commented.toml", "full.toml", "noeol.toml"} {
		if b, err := os.ReadFile(filepath.Join("testdata/config", name)); err == nil {
			f.Add(b, "backup")
		}
	}
	f.Add([]byte("gates.x = {paused = true}\n"), "x")
	f.Add([]byte("[gates]\nx.paused = true\n"), "x")
	f.Add([]byte("[gates.x]\nreason = '''\n[gates.y]\n'''\n"), "y")
	f.Add([]byte("[gates.x]\nlegacy_locks = [ # c\n \"/a\", ]\npaused = true\n"), "x")
	f.Add([]byte("[gates.x]\nreason = \"\"\"a\\\n  b\"\"\"\"\"\n"), "x")
	f.Fuzz(func(t *testing.T, data []byte, gname string) {
		if _, err := editScan(data); err != nil && strings.ContainsAny(err.msg, "\r\n") {
			t.Fatalf("multi-line scan error %q", err.msg)
		}
		cfg, err := Parse("/c", data)
		if err != nil || gate.CheckName(gname) != nil {
			return
		}
		for _, paused := range []bool{true, false} {
			if cfg.Gate(gname).Paused == paused {
				continue
			}
			out, err := editPaused("/c", data, cfg, gname, paused)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "config /c") || strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("bad error %q", err)
				}
				continue
			}
			// Whatever the editor produced must pass verification: the
			// verification is a safety net, not the editor's logic.
			if err := editVerify("/c", out, cfg, gname, paused); err != nil {
				t.Fatalf("edit of %q -> %q failed verification: %v", data, out, err)
			}
		}
	})
}

// TestEditPausedRandom edits many generated configs, written in the forms
// people use (headers spelled in every way, comments everywhere, decoy
// headers and paused lines inside strings and arrays, LF or CRLF): every
// edit of a simple form must succeed, pass verification and change only
// what it should; the forms cron-gate does not edit must be refused.
func TestEditPausedRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for iter := range 1500 {
		eol := pick("\n", "\r\n")
		var b, top strings.Builder
		line := func(s string) { b.WriteString(s + eol) }
		topLine := func(s string) { top.WriteString(s + eol) } // before any header
		if rng.IntN(2) == 0 {
			topLine(pick("# top comment", "", "state_dir = \"/srv/cg\" # c", "skip_code = 3", "history = 20"))
		}
		simple := map[string]bool{} // gates with an editable table
		n := 1 + rng.IntN(5)
		for i := range n {
			name := fmt.Sprintf("g%d", i)
			if rng.IntN(3) == 0 {
				name = fmt.Sprintf("g.%d", i)
			}
			q := safetext.TOMLKey(name)
			if rng.IntN(4) == 0 {
				line(pick("", "# about "+name, "   # indented comment [gates.zz]"))
			}
			if rng.IntN(6) == 0 {
				// A form that is refused when paused must be added or changed.
				switch rng.IntN(3) {
				case 0:
					topLine(fmt.Sprintf("gates.%s = { paused = %v }", q, rng.IntN(2) == 0))
				case 1:
					topLine(fmt.Sprintf("gates.%s.paused = %v", q, rng.IntN(2) == 0))
				case 2:
					topLine(fmt.Sprintf("gates.%s.reason = \"r\"", q))
				}
				continue
			}
			simple[name] = true
			header := pick("[gates.%s]", "[ gates . %s ]", "[gates.%s] # hdr", "\t[gates.%s]#x")
			if !strings.Contains(q, "\"") && rng.IntN(3) == 0 {
				q = pick("\""+name+"\"", "'"+name+"'")
			}
			line(fmt.Sprintf(header, q))
			indent := pick("", "  ", "\t")
			keys := []string{}
			if rng.IntN(2) == 0 {
				keys = append(keys, fmt.Sprintf("%s = %v%s", pick("paused", "\"paused\""), rng.IntN(2) == 0, pick("", " # why", "\t#x")))
			}
			for range rng.IntN(3) {
				keys = append(keys, pick(
					"reason = \"a [gates.zz] \\\" # not a comment\"",
					// A reason is one line (gate.CheckReason): the
					// multi-line string is a legacy lock's path.
					"legacy_locks = ['''/r"+eol+"[gates.zz]"+eol+"paused = true''']",
					"reason = \"\"\"x\\"+eol+"  paused = false \"\"\"\"",
					"interval = \"5m\" # every 5 minutes",
					"legacy_locks = ["+eol+"  \"/run/a\", # paused = true"+eol+"  '/run/[gates.zz]',"+eol+"]",
					"log_output = true",
				))
			}
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			seen := map[string]bool{}
			for _, k := range keys {
				kn := strings.Fields(k)[0]
				if seen[kn] {
					continue
				}
				seen[kn] = true
				line(indent + k)
				if rng.IntN(4) == 0 {
					line(pick("", indent+"# comment"))
				}
			}
		}
		src := top.String() + b.String()
		if rng.IntN(5) == 0 {
			src = strings.TrimSuffix(src, eol)
		}
		cfg, err := Parse("/c", []byte(src))
		if err != nil {
			t.Fatalf("iter %d: generated an invalid config: %v\n%s", iter, err, src)
		}
		for _, name := range append(sortedGateNames(cfg), "new") {
			for _, paused := range []bool{true, false} {
				g := cfg.Gate(name)
				if g.Paused == paused {
					continue
				}
				out, err := editPaused("/c", []byte(src), cfg, name, paused)
				declared := cfg.Gates[name] != nil
				mustWork := simple[name] || !declared
				if err != nil {
					if mustWork {
						t.Fatalf("iter %d: SetPaused(%s, %v) refused: %v\n%s", iter, name, paused, err, src)
					}
					if !strings.Contains(err.Error(), "by hand") {
						t.Fatalf("iter %d: refusal without advice: %v", iter, err)
					}
					continue
				}
				if err := editVerify("/c", out, cfg, name, paused); err != nil {
					t.Fatalf("iter %d: SetPaused(%s, %v): %v\n%s\n---\n%s", iter, name, paused, err, src, out)
				}
				before, after := splitKeep(src), splitKeep(string(out))
				switch {
				case g.PausedLine > 0: // token edit: one line differs
					diff := 0
					for i := range before {
						if i < len(after) && before[i] != after[i] {
							diff++
						}
					}
					if len(before) != len(after) || diff != 1 {
						t.Fatalf("iter %d: token edit changed %d lines\n%s\n---\n%s", iter, diff, src, out)
					}
				case declared: // one line inserted
					if len(after) != len(before)+1 {
						t.Fatalf("iter %d: insert changed the line count %d -> %d", iter, len(before), len(after))
					}
				default: // appended
					if !strings.HasPrefix(string(out), src) {
						t.Fatalf("iter %d: append changed the existing text", iter)
					}
				}
				if strings.Contains(src, "\r\n") && strings.Count(string(out), "\n") != strings.Count(string(out), "\r\n") {
					t.Fatalf("iter %d: LF in a CRLF file:\n%q", iter, out)
				}
			}
		}
	}
}

func sortedGateNames(c *gate.Config) []string {
	return cfgSortedKeys(c.Gates)
}
