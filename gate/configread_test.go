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

const (
	fullConfig = "# held\n[gates.held]\npaused = true\n# end\n"
	halfConfig = "# held\n[gates.held]\n" // what a reader sees mid-save
)

// A file written just now may be half written: ReadConfig reads it again
// until two reads agree, so it returns the finished file, not the prefix
// it saw first. The "editor" finishes its save during the first pause.
func TestReadConfigWaitsForTheSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte(halfConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	sleeps, appended := 0, false
	withSettle(t, nil, func(time.Duration) {
		sleeps++
		if !appended {
			appended = true
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(fullConfig[len(halfConfig):])
			f.Close()
		}
	})
	data, err := ReadConfig(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != fullConfig {
		t.Fatalf("ReadConfig returned %q, want the finished file %q", data, fullConfig)
	}
	if sleeps != 2 {
		t.Errorf("%d pauses, want 2 (prefix, then the file twice)", sleeps)
	}
	// ReadConfigVersion the same, and its version is the file's.
	sleeps = 0
	data, v, err := ReadConfigVersion(path)
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
	configSettleMax = 300 * time.Millisecond
	withSettle(t, nil, func(time.Duration) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("# more\n")
		f.Close()
		time.Sleep(10 * time.Millisecond)
	})
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
	withSettle(t, nil, func(time.Duration) {
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
	if _, _, err := ReadConfigVersion(zero); err == nil {
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
