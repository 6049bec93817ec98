package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// withSettle replaces the settling rule's clock and sleep for one test.
func withSettle(t *testing.T, now func() time.Time, sleep func(time.Duration)) {
	t.Helper()
	oldNow, oldSleep, oldMax := configNow, configSleep, configSettleMax
	t.Cleanup(func() { configNow, configSleep, configSettleMax = oldNow, oldSleep, oldMax })
	if now != nil {
		configNow = now
	}
	if sleep != nil {
		configSleep = sleep
	}
}

// fakeClock starts at the real time and moves only when slept on; each
// sleep first runs step (the "editor" acting while cron-gate waits).
type fakeClock struct {
	t      time.Time
	sleeps int
	step   func(n int)
}

func newFakeClock(t *testing.T, step func(n int)) *fakeClock {
	c := &fakeClock{t: time.Now(), step: step}
	withSettle(t, func() time.Time { return c.t }, func(d time.Duration) {
		c.sleeps++
		if c.step != nil {
			c.step(c.sleeps)
		}
		c.t = c.t.Add(d)
	})
	return c
}

const (
	fullConfig = "# held\n[gates.held]\npaused = true\n# end\n"
	halfConfig = "# held\n[gates.held]\n" // what a reader sees mid-save
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

// A file written just now may be half written: ReadConfig uses a version
// only once it has been quiet for configSettle, so it returns the finished
// file, not the prefix it saw first. The "editor" finishes its save during
// the first wait.
func TestReadConfigWaitsForTheSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(halfConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newFakeClock(t, func(n int) {
		if n == 1 {
			appendTo(t, path, fullConfig[len(halfConfig):])
		}
	})
	data, err := ReadConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != fullConfig {
		t.Fatalf("ReadConfig returned %q, want the finished file %q", data, fullConfig)
	}
	if c.sleeps < 2 {
		t.Errorf("%d waits, want at least 2 (the prefix, then the finished file until it is a second old)", c.sleeps)
	}
	// ReadConfigVersion the same, and its version is the file's.
	data, v, err := ReadConfigVersion(path, FileVersion{})
	if err != nil || string(data) != fullConfig {
		t.Fatalf("ReadConfigVersion: %q %v", data, err)
	}
	if !ConfigUnchanged(path, data, v) {
		t.Errorf("ConfigUnchanged of the file as read is false")
	}
	if ConfigUnchanged(path, []byte(halfConfig), v) {
		t.Errorf("ConfigUnchanged of other bytes is true")
	}
	if err := os.WriteFile(path, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if ConfigUnchanged(path, data, v) {
		t.Errorf("ConfigUnchanged after a rewrite with the same bytes is true (the mtime changed)")
	}
}

// An editor that stops in the middle of its save for longer than a short
// pause (here 500 ms, as a loaded machine or a slow disk makes it) must
// not have its prefix taken for the config: two reads that agree are not
// enough, the version must have been quiet for configSettle. (Finding F8,
// docs/reliability.md: with "two reads 100 ms apart agree", a paused gate
// ran.)
func TestReadConfigWriterStallsMidSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(halfConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	// The editor writes the rest 500 ms after its first write, in the
	// reader's time: during whichever wait of the reader spans that.
	resume := time.Unix(0, statCtime(t, path)).Add(500 * time.Millisecond)
	appended := false
	c := &fakeClock{t: time.Now()}
	withSettle(t, func() time.Time { return c.t }, func(d time.Duration) {
		c.sleeps++
		if !appended && !c.t.Add(d).Before(resume) {
			appended = true
			appendTo(t, path, fullConfig[len(halfConfig):])
		}
		c.t = c.t.Add(d)
	})
	data, err := ReadConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != fullConfig {
		t.Fatalf("ReadConfig returned the prefix %q of a save that stalled for 500 ms, want %q", data, fullConfig)
	}
}

func statCtime(t *testing.T, path string) int64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ctim.Nano()
}

// The version an edit under the config lock wrote (WrittenVersion) is
// taken at once by the next edit, however recent; any other version waits.
func TestReadConfigVersionTrusted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(tmp, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	v, ok := WrittenVersion(path, VersionOf(&st))
	if !ok {
		t.Fatal("WrittenVersion: the renamed file is not the one written")
	}
	c := newFakeClock(t, nil)
	data, got, err := ReadConfigVersion(path, v)
	if err != nil || string(data) != fullConfig || got != v || c.sleeps != 0 {
		t.Fatalf("trusted version: %q %v %v, %d waits; want it at once", data, got, err, c.sleeps)
	}
	// Changed since (an in-place save): no longer trusted, nor written.
	appendTo(t, path, "# more\n")
	if _, ok := WrittenVersion(path, VersionOf(&st)); ok {
		t.Error("WrittenVersion of a file changed after the rename: ok")
	}
	if _, _, err := ReadConfigVersion(path, v); err != nil {
		t.Fatal(err)
	}
	if c.sleeps == 0 {
		t.Error("a version other than the trusted one was taken without waiting")
	}
}

// The common case: a file that has not changed for a second is read once,
// without any pause.
func TestReadConfigOldFileReadOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	withSettle(t, func() time.Time { return time.Now().Add(2 * time.Second) }, func(time.Duration) {
		t.Fatal("ReadConfig paused on a file that did not change for a second")
	})
	if data, err := ReadConfig(path, false); err != nil || string(data) != fullConfig {
		t.Fatalf("ReadConfig: %q %v", data, err)
	}
}

// A file that never stops changing is an error after configSettleMax, so
// that a run does not happen on it.
func TestReadConfigNeverSettles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(halfConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	withSettle(t, nil, func(time.Duration) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("# more\n")
		f.Close()
		time.Sleep(10 * time.Millisecond)
	})
	configSettleMax = 300 * time.Millisecond // after withSettle, which restores it
	_, err := ReadConfig(path, false)
	if err == nil || !strings.Contains(err.Error(), "kept changing") || !strings.Contains(err.Error(), "cron-gate edit") {
		t.Fatalf("ReadConfig of a file that never settles: %v", err)
	}
}

// An editor that renames the old file away and then writes a new one
// leaves a moment without a file: a missing config in a directory that
// just changed is looked up again, and the new file is read rather than
// "no config" (which, for the default path, would be an empty config
// with every gate unpaused).
func TestReadConfigMissingForAMoment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path+"~", []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	created := false
	newFakeClock(t, func(int) {
		if !created {
			created = true
			if err := os.WriteFile(path, []byte(fullConfig), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	data, err := ReadConfig(path, true)
	if err != nil || string(data) != fullConfig {
		t.Fatalf("ReadConfig: %q %v, want the new file", data, err)
	}
	// Still missing after the pause: missing (nil, or the error).
	other := filepath.Join(filepath.Dir(path), "none.toml")
	if data, err := ReadConfig(other, true); data != nil || err != nil {
		t.Errorf("missing, missingOK: %q %v", data, err)
	}
	if _, err := ReadConfig(other, false); err == nil || !strings.Contains(err.Error(), "file does not exist") {
		t.Errorf("missing: %v", err)
	}
}

// Special files are refused at once, without blocking: a FIFO (a plain
// open waits for a writer for ever), a device through a symlink (endless).
func TestReadConfigSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", zero: "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadConfig(path, false)
			done <- err
		}()
		select {
		case err := <-done:
			want := "is not a regular file but " + kind + "; point to the TOML config file"
			if err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("%s: %v, want ...%q", path, err, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("ReadConfig(%s) still blocked after 20s", path)
		}
	}
	// ReadConfigVersion does not follow a symlink.
	if _, _, err := ReadConfigVersion(zero, FileVersion{}); err == nil {
		t.Errorf("ReadConfigVersion followed a symlink")
	}
}

func TestReadConfigTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, make([]byte, MaxConfigBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	withSettle(t, func() time.Time { return time.Now().Add(2 * time.Second) }, nil)
	if _, err := ReadConfig(path, false); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("ReadConfig of a large file: %v", err)
	}
	if err := os.WriteFile(path, make([]byte, MaxConfigBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadConfig(path, false); err != nil || len(data) != MaxConfigBytes {
		t.Errorf("ReadConfig of a file of exactly MaxConfigBytes: %d %v", len(data), err)
	}
}
