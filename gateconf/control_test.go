package gateconf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crongate/crongate/gate"
)

// A force-resume whose config edit fails changes nothing: the command-line
// pause set beside the config pause is still there, so the gate stays
// paused (with [etcd] the same order keeps the shared pause on every host).
func TestResumeEditFailureKeepsPauses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	src := "state_dir = \"" + dir + "/state\"\ngates.x = {paused = true}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Pause(cfg, "x", gate.Pause{Reason: "quota"}); err != nil {
		t.Fatal(err)
	}
	_, err = Resume(cfg, "x", true)
	var ee *EditError
	if !errors.As(err, &ee) {
		t.Fatalf("Resume of an inline-table pause: %v, want an EditError", err)
	}
	pauses, err := gate.ReadPauses(gate.StateDirFor(cfg))
	if err != nil || pauses["x"].Reason != "quota" {
		t.Fatalf("the command-line pause was lifted by a failed resume: %+v %v", pauses, err)
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Fatalf("config changed: %q", b)
	}
}
