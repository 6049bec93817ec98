package crongate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/gateconf"
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
	cfg, err := gateconf.Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Pause(cfg, gate.Pauses{}, "x", gate.Pause{Reason: "quota"}, false); err != nil {
		t.Fatal(err)
	}
	_, err = Resume(cfg, gate.Pauses{}, gateconf.SetPaused, "x", true)
	var ee *EditError
	if !errors.As(err, &ee) {
		t.Fatalf("Resume of an inline-table pause: %v, want an EditError", err)
	}
	ps, err := gate.NewPauseFile(gate.StateDirFor(cfg)).List(context.Background())
	if err != nil || ps["x"].Reason != "quota" {
		t.Fatalf("the command-line pause was lifted by a failed resume: %+v %v", ps, err)
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Fatalf("config changed: %q", b)
	}
}

// A name cron-gate does not know is not paused (a typo would pause nothing
// while the real gate runs on): refused with the closest known name,
// unless forced. Declared gates, gates with records and gates already
// paused are known. Resuming an unknown name says it was not paused, and
// what was meant.
func TestPauseUnknownGate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	src := "state_dir = \"" + dir + "/state\"\n[gates.translate]\ninterval = \"1h\"\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "state", "gates", "classifier"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateconf.Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, suggest := range map[string]string{"tranlsate": "translate", "clasifier": "classifier", "zzz": ""} {
		err := Pause(cfg, gate.Pauses{}, name, gate.Pause{}, false)
		var u *UnknownGateError
		if !errors.As(err, &u) || u.Suggest != suggest {
			t.Errorf("Pause(%s): %v, want an UnknownGateError suggesting %q", name, err, suggest)
			continue
		}
		want := "pause gate " + name + ": no gate " + name + " is declared in " + path + " or has records"
		if suggest != "" {
			want += " (did you mean " + suggest + "?)"
		}
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
	if p, _ := gate.NewPauseFile(gate.StateDirFor(cfg)).List(context.Background()); len(p) != 0 {
		t.Fatalf("a refused pause was recorded: %v", p)
	}
	for _, name := range []string{"translate", "classifier"} {
		if err := Pause(cfg, gate.Pauses{}, name, gate.Pause{}, false); err != nil {
			t.Errorf("Pause(%s) of a known gate: %v", name, err)
		}
	}
	if err := Pause(cfg, gate.Pauses{}, "fresh", gate.Pause{}, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
	if err := Pause(cfg, gate.Pauses{}, "fresh", gate.Pause{Reason: "again"}, false); err != nil {
		t.Errorf("a paused gate is known: %v", err)
	}
	r, err := Resume(cfg, gate.Pauses{}, gateconf.SetPaused, "tranlsate", true)
	if err != nil || r.Msg != "gate tranlsate was not paused; no gate tranlsate is declared in "+path+" or has records (did you mean translate?)" {
		t.Errorf("Resume of a typo: %q %v", r.Msg, err)
	}
	r, err = Resume(cfg, gate.Pauses{}, gateconf.SetPaused, "classifier", true)
	if err != nil || r.Msg != "resumed gate classifier: lifted its command-line pause" {
		t.Errorf("Resume: %q %v", r.Msg, err)
	}
	r, err = Resume(cfg, gate.Pauses{}, gateconf.SetPaused, "classifier", true)
	if err != nil || r.Msg != "gate classifier was not paused" {
		t.Errorf("Resume of a gate that is not paused: %q %v", r.Msg, err)
	}
}
