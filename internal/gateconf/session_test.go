package gateconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEditSessionSave(t *testing.T) {
	path, lock := editSetup(t, "# keep\n[gates.a]\npaused = true\n")
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(path), "link.toml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	s, err := BeginEdit(link, lock)
	if err != nil {
		t.Fatal(err)
	}
	if s.Target != path || string(s.Orig) != "# keep\n[gates.a]\npaused = true\n" {
		t.Fatalf("session %+v", s)
	}
	if err := s.Save([]byte("[gates.a]\npausd = true\n")); err == nil || !strings.Contains(err.Error(), "unknown key gates.a.pausd") {
		t.Errorf("Save of an invalid config: %v", err)
	}
	if got := readString(t, path); got != string(s.Orig) {
		t.Errorf("an invalid config was written: %q", got)
	}
	if err := s.Save([]byte("# keep\n[gates.a]\npaused = false\n")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if got := readString(t, path); got != "# keep\n[gates.a]\npaused = false\n" {
		t.Errorf("config %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode())
	}
}

// A save by something that does not take the lock, during the session:
// Save writes nothing and says so (ErrConfigChanged).
func TestEditSessionChangedMeanwhile(t *testing.T) {
	path, lock := editSetup(t, "[gates.a]\npaused = true\n")
	s, err := BeginEdit(path, lock)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := "[gates.a]\npaused = true\n# saved in place by another editor\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(other)
	f.Close()
	err = s.Save([]byte("[gates.a]\npaused = false\n"))
	if !errors.Is(err, ErrConfigChanged) || !strings.HasPrefix(err.Error(), "config "+path+": ") {
		t.Fatalf("Save after another save: %v", err)
	}
	if got := readString(t, path); got != other {
		t.Errorf("config %q, want the other save kept", got)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 2 { // config and lock
		t.Errorf("left behind: %v", ents)
	}
}

// The config lock is exclusive between sessions and SetPaused, and a wait
// for it is bounded.
func TestEditLockBusy(t *testing.T) {
	path, lock := editSetup(t, "[gates.a]\npaused = true\n")
	s, err := BeginEdit(path, lock)
	if err != nil {
		t.Fatal(err)
	}
	_, err = editLock(lock, 50*time.Millisecond)
	if !errors.Is(err, errEditLockBusy) || !strings.Contains(err.Error(), "cron-gate edit open in an editor?") {
		t.Fatalf("editLock while a session holds it: %v", err)
	}
	s.Close()
	l, err := editLock(lock, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("editLock after the session: %v", err)
	}
	l.release()
}

func TestBeginEditMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := BeginEdit(filepath.Join(dir, "none.toml"), filepath.Join(dir, "lock"))
	if err == nil || !strings.Contains(err.Error(), "file does not exist; create it first") {
		t.Fatalf("BeginEdit of a missing file: %v", err)
	}
	// The lock was released: another session can start.
	l, err := editLock(filepath.Join(dir, "lock"), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	l.release()
}
