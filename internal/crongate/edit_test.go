package crongate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

const editOrig = `# the config, with a comment that must survive
[gates.a]
paused = true # by ops
`

// editFixture is a config in a fresh directory and an edit session on it
// whose editor is the test's function and whose answers are answers.
type editFixture struct {
	path   string
	stderr bytes.Buffer
	sigs   chan os.Signal
	s      *editSession
	calls  int
}

func newEditFixture(t *testing.T, answers string, editor func(f *editFixture, file string) error) *editFixture {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("CRON_GATE_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("TMPDIR", dir)
	f := &editFixture{path: filepath.Join(dir, "config.toml"), sigs: make(chan os.Signal, 4)}
	if err := os.WriteFile(f.path, []byte(editOrig), 0o640); err != nil {
		t.Fatal(err)
	}
	f.s = &editSession{
		out:    &safetext.Printer{Prog: "cron-gate", W: &f.stderr},
		in:     bufio.NewReader(strings.NewReader(answers)),
		prompt: &f.stderr,
		sigs:   f.sigs,
		editor: func(file string) error { f.calls++; return editor(f, file) },
	}
	return f
}

func (f *editFixture) config(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, file, s string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEditSaves(t *testing.T) {
	var copyMode os.FileMode
	f := newEditFixture(t, "", func(f *editFixture, file string) error {
		fi, err := os.Stat(file)
		if err != nil {
			return err
		}
		copyMode = fi.Mode().Perm() | fi.Mode().Type()
		if di, err := os.Stat(filepath.Dir(file)); err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("the copy's directory: %v %v, want mode 0700", di.Mode(), err)
		}
		b, _ := os.ReadFile(file)
		writeFile(t, file, strings.Replace(string(b), "paused = true", "paused = false", 1))
		return nil
	})
	if code := f.s.run(f.path); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, f.stderr.String())
	}
	if copyMode != 0o600 {
		t.Errorf("the copy had mode %v, want 0600", copyMode)
	}
	if want := strings.Replace(editOrig, "paused = true", "paused = false", 1); f.config(t) != want {
		t.Errorf("config:\n%s\nwant:\n%s", f.config(t), want)
	}
	if fi, _ := os.Stat(f.path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", fi.Mode())
	}
	if !strings.Contains(f.stderr.String(), "cron-gate: saved config "+f.path+"\n") {
		t.Errorf("stderr %q does not say it saved", f.stderr.String())
	}
	assertNoCopies(t, f)
}

// assertNoCopies: the private directory is gone.
func assertNoCopies(t *testing.T, f *editFixture) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "cron-gate-edit-*"))
	if len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
}

func TestEditNoChanges(t *testing.T) {
	f := newEditFixture(t, "", func(*editFixture, string) error { return nil })
	before, _ := os.Stat(f.path)
	if code := f.s.run(f.path); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, f.stderr.String())
	}
	after, _ := os.Stat(f.path)
	if !os.SameFile(before, after) {
		t.Errorf("an unchanged edit replaced the file")
	}
	if !strings.Contains(f.stderr.String(), "no changes; nothing saved") {
		t.Errorf("stderr %q", f.stderr.String())
	}
	assertNoCopies(t, f)
}

// An invalid config is never saved: the error is shown and the person
// chooses to edit again (then saves a valid one) or to leave.
func TestEditInvalidThenAgain(t *testing.T) {
	f := newEditFixture(t, "what?\ne\n", func(f *editFixture, file string) error {
		b, _ := os.ReadFile(file)
		if f.calls == 1 {
			writeFile(t, file, string(b)+"pausd = true\n")
			return nil
		}
		if !strings.Contains(string(b), "pausd = true") {
			t.Errorf("the second edit does not start from the first one's text: %q", b)
		}
		writeFile(t, file, strings.Replace(string(b), "pausd = true\n", "reason = \"fixed\"\n", 1))
		return nil
	})
	if code := f.s.run(f.path); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, f.stderr.String())
	}
	if f.calls != 2 {
		t.Errorf("editor ran %d times, want 2", f.calls)
	}
	out := f.stderr.String()
	for _, want := range []string{
		"cron-gate: config " + f.path + " line 4: unknown key gates.a.pausd",
		"what now? (e)dit again, e(x)it without saving [e/x]: ",
		"saved config",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "what now?") != 2 {
		t.Errorf("an unknown answer must ask again:\n%s", out)
	}
	if !strings.Contains(f.config(t), "reason = \"fixed\"") {
		t.Errorf("config not saved:\n%s", f.config(t))
	}
}

func TestEditInvalidThenLeave(t *testing.T) {
	for _, answers := range []string{"x\n", ""} { // "x", or the end of input
		f := newEditFixture(t, answers, func(f *editFixture, file string) error {
			writeFile(t, file, "[gates.a]\npaused = 3\n")
			return nil
		})
		if code := f.s.run(f.path); code != runner.ExitFailure {
			t.Errorf("answers %q: exit %d, want %d", answers, code, runner.ExitFailure)
		}
		if f.config(t) != editOrig {
			t.Errorf("answers %q: an invalid config was saved:\n%s", answers, f.config(t))
		}
		if !strings.Contains(f.stderr.String(), "not saved; the config is as it was") {
			t.Errorf("answers %q: stderr %q", answers, f.stderr.String())
		}
		assertNoCopies(t, f)
	}
}

// Someone saves the config without cron-gate edit while the person edits:
// nothing is written, the person's edit is kept in a file that is named.
func TestEditConfigChangedMeanwhile(t *testing.T) {
	other := editOrig + "# saved by another editor\n"
	f := newEditFixture(t, "", func(f *editFixture, file string) error {
		writeFile(t, f.path, other)
		writeFile(t, file, editOrig+"# mine\n")
		return nil
	})
	if code := f.s.run(f.path); code != runner.ExitFailure {
		t.Fatalf("exit %d; stderr:\n%s", code, f.stderr.String())
	}
	if f.config(t) != other {
		t.Errorf("the other save was overwritten:\n%s", f.config(t))
	}
	out := f.stderr.String()
	if !strings.Contains(out, "changed by someone else during the edit") {
		t.Errorf("stderr %q", out)
	}
	i := strings.Index(out, "your edit is kept in ")
	if i < 0 {
		t.Fatalf("stderr does not say where the edit is: %q", out)
	}
	kept := strings.TrimSpace(strings.SplitN(out[i+len("your edit is kept in "):], "\n", 2)[0])
	if b, err := os.ReadFile(kept); err != nil || string(b) != editOrig+"# mine\n" {
		t.Errorf("kept file %s: %q %v", kept, b, err)
	}
}

// A TERM while the editor runs: nothing saved, the edit kept, 128+15; an
// INT (typed at the terminal, for the editor) is ignored.
func TestEditSignal(t *testing.T) {
	f := newEditFixture(t, "", func(f *editFixture, file string) error {
		f.sigs <- syscall.SIGINT
		f.sigs <- syscall.SIGTERM
		writeFile(t, file, editOrig+"# mine\n")
		return nil
	})
	if code := f.s.run(f.path); code != runner.ExitSignalBase+int(syscall.SIGTERM) {
		t.Fatalf("exit %d; stderr:\n%s", code, f.stderr.String())
	}
	if f.config(t) != editOrig {
		t.Errorf("saved after a TERM:\n%s", f.config(t))
	}
	if !strings.Contains(f.stderr.String(), "received SIGTERM") || !strings.Contains(f.stderr.String(), "your edit is kept in") {
		t.Errorf("stderr %q", f.stderr.String())
	}
}
