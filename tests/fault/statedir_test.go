package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// mountSmallTmpfs mounts a 64 KiB tmpfs on a new directory and unmounts it
// when the test ends. It needs root: without root it skips, unless CI is
// set, where it fails.
func mountSmallTmpfs(t *testing.T) string {
	t.Helper()
	needRoot(t, "mounting a small tmpfs as a full state dir")
	dir := filepath.Join(realTempDir(t), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs -o size=64k tmpfs %s: %v %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			exec.Command("umount", "-l", dir).Run()
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill writes to name until the file system is full, and returns a
// function that frees the space again.
func fill(t *testing.T, name string) func() {
	t.Helper()
	f, err := os.Create(name)
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if f != nil {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
		f.Close()
	}
	// One more byte must not fit either: the disk is full.
	if err := os.WriteFile(name+".probe", make([]byte, 4096), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the tmpfs is not full: writing a page gave %v", err)
	}
	os.Remove(name + ".probe")
	return func() { os.Remove(name) }
}

// journalRecords reads a gate's journal as (run, event) pairs, in order.
func journalRecords(t *testing.T, state, gate string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "gates", gate, "journal.jsonl"))
	if err != nil {
		return nil
	}
	var recs []string
	for _, line := range strings.Split(string(data), "\n") {
		var r struct{ Run, Event string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Event != "" {
			recs = append(recs, r.Run+" "+r.Event)
		}
	}
	return recs
}

var lostRe = regexp.MustCompile(`(?m)^cron-gate: warning: journal of gate (\S+): (.*); the (\w+) record of run (\S+) is lost$`)
var unavailableRe = regexp.MustCompile(`(?m)^cron-gate: warning: journal of gate (\S+) unavailable: .*; this run is not recorded$`)

// accountFor checks the README's promise for one cron-gate call whose
// stderr is given: each record the call should have written (events) is
// either in the journal or reported lost on stderr, never both (a record
// that was written but reported lost is a false alarm) and never neither (a
// silent loss). before is the journal as it was before the call. It
// returns the events that were lost.
func accountFor(t *testing.T, state, gate string, before []string, stderr string, events ...string) []string {
	t.Helper()
	after := journalRecords(t, state, gate)
	if len(after) < len(before) {
		t.Fatalf("gate %s: the journal shrank", gate)
	}
	added := after[len(before):]
	reported := map[string]string{} // event -> run
	for _, m := range lostRe.FindAllStringSubmatch(stderr, -1) {
		if m[1] == gate {
			reported[m[3]] = m[4]
		}
	}
	unavailable := false
	for _, m := range unavailableRe.FindAllStringSubmatch(stderr, -1) {
		unavailable = unavailable || m[1] == gate
	}
	var lost []string
	for _, ev := range events {
		var written string
		for _, a := range added {
			if run, e, _ := strings.Cut(a, " "); e == ev {
				written = run
			}
		}
		run, said := reported[ev]
		switch {
		case written != "" && said && run == written:
			t.Errorf("gate %s: the %s record of run %s is in the journal, but stderr says it is lost (false alarm):\n%s",
				gate, ev, run, stderr)
		case written != "":
		case said || unavailable:
			lost = append(lost, ev)
		default:
			t.Errorf("gate %s: the %s record is neither in the journal nor reported lost (silent loss); stderr:\n%s", gate, ev, stderr)
		}
	}
	return lost
}

// TestStateDirFull runs cron-gate with its state dir on a 64 KiB tmpfs that
// is full. The README promises that the command still runs, its exit code
// passes through, and every record that cannot be written is reported on
// stderr (accountFor checks that each record is written or reported, not
// both, not neither). Afterwards, with space again, status reads the
// journals and says what is known, and pauses.json (replaced atomically) is
// never torn.
func TestStateDirFull(t *testing.T) {
	full(t)
	state := mountSmallTmpfs(t)
	root := filepath.Dir(state)
	cfg := fmt.Sprintf("state_dir = %q\n\n[gates.logged]\nlog_output = true\n", state)
	if err := os.WriteFile(filepath.Join(root, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(gateEnv(root), "FAULT_RUN="+root)
	killLeftovers(t, "FAULT_RUN="+root)
	gate := func(t *testing.T, name string, events []string, argv ...string) (result, string, string, []string) {
		t.Helper()
		before := journalRecords(t, state, name)
		res, out, e := run(t, env, append([]string{bin("cron-gate"), name, "--"}, argv...)...)
		return res, out, e, accountFor(t, state, name, before, e, events...)
	}
	startEnd := []string{"start", "end"}

	// A gate that ran once while there was space, and a command-line
	// pause of another gate, so that pauses.json exists.
	if res, _, e := run(t, env, bin("cron-gate"), "before", "--", "true"); res != (result{}) {
		t.Fatalf("first run: %v %s", res, e)
	}
	if res, _, e := run(t, env, bin("cron-gate"), "pause", "paused", "--reason", "test", "--force"); res != (result{}) {
		t.Fatalf("pause: %v %s", res, e)
	}
	pausesBefore, err := os.ReadFile(filepath.Join(state, "pauses.json"))
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(state, "filler")
	free := fill(t, filler)

	t.Run("new-gate", func(t *testing.T) {
		// No journal yet: the command runs, exit 3 passes through, and
		// both records are lost and reported.
		res, out, e, lost := gate(t, "fresh", startEnd, "sh", "-c", "echo ran; exit 3")
		if res != (result{code: 3}) || out != "ran\n" {
			t.Fatalf("got %v, stdout %q; want exit 3 and the command's output; stderr:\n%s", res, out, e)
		}
		if len(lost) != 2 {
			t.Errorf("want both records lost on a full disk, lost %v", lost)
		}
	})
	t.Run("existing-gate", func(t *testing.T) {
		// The journal's last page may still have room for a line or two
		// (tmpfs allocates whole pages): what fits is written, the rest is
		// reported.
		if res, _, e, _ := gate(t, "before", startEnd, "true"); res != (result{}) {
			t.Fatalf("got %v, want exit 0; stderr:\n%s", res, e)
		}
	})
	t.Run("skip", func(t *testing.T) {
		res, _, e, _ := gate(t, "paused", []string{"skip"}, "touch", filepath.Join(root, "ran-paused"))
		if res != (result{code: 75}) {
			t.Fatalf("a paused gate on a full disk: %v, want 75; stderr:\n%s", res, e)
		}
		if _, err := os.Stat(filepath.Join(root, "ran-paused")); err == nil {
			t.Fatal("a paused gate ran")
		}
	})
	t.Run("output-log", func(t *testing.T) {
		res, out, e, _ := gate(t, "logged", startEnd, "sh", "-c", "echo out; echo err >&2; exit 4")
		if res != (result{code: 4}) || out != "out\n" || !strings.Contains(e, "err\n") {
			t.Fatalf("got %v, stdout %q; want exit 4 and the output passed through; stderr:\n%s", res, out, e)
		}
		if !regexp.MustCompile(`(?m)^cron-gate: warning: output log of gate logged: .*; the output of run \S+ is not kept$`).MatchString(e) {
			t.Errorf("the lost output log is not reported:\n%s", e)
		}
	})
	t.Run("pause-fails-cleanly", func(t *testing.T) {
		// pause cannot write pauses.json: it fails (125), and the old
		// file is intact, so that other gates still run (an unreadable
		// pauses.json would stop every gate).
		res, _, e := run(t, env, bin("cron-gate"), "pause", "other", "--force")
		if res != (result{code: 125}) || !strings.Contains(e, "no space left on device") {
			t.Errorf("pause on a full disk: %v, want 125 with the cause; stderr:\n%s", res, e)
		}
		after, err := os.ReadFile(filepath.Join(state, "pauses.json"))
		if err != nil || string(after) != string(pausesBefore) {
			t.Errorf("pauses.json changed or unreadable after a failed pause: %v\n%s", err, after)
		}
		if res, _, e := run(t, env, bin("cron-gate"), "fresh", "--", "true"); res != (result{}) {
			t.Errorf("another gate after the failed pause: %v %s", res, e)
		}
	})

	// The disk fills while the command runs (the command fills it), with
	// space again before: the start record is written; the end record is
	// written if the journal's last page has room for it, else lost and
	// reported. Both cases are produced: "roomy" right after the first
	// run; "tight" once earlier runs have brought the journal's size to
	// just under a page boundary.
	// The command first waits for its start record (cron-gate appends it
	// just after starting the command), then fills the disk.
	// If the file nofill exists it exits 0 at once instead (the same argv,
	// so the same record sizes, for the padding runs below).
	nofill := filepath.Join(root, "nofill")
	fillCmd := func(gate string) []string {
		journal := filepath.Join(state, "gates", gate, "journal.jsonl")
		return []string{"sh", "-c", "[ -e " + nofill + " ] && exit 0; " +
			`while ! grep -q "\"run\":\"[^\"]*-$PPID\",\"event\":\"start\"" ` + journal +
			" 2>/dev/null; do sleep 0.002; done; cat /dev/zero > " + filler + " 2>/dev/null; exit 5"}
	}
	t.Run("fills-during-run-roomy", func(t *testing.T) {
		free()
		res, _, e, lost := gate(t, "roomy", startEnd, fillCmd("roomy")...)
		if res != (result{code: 5}) {
			t.Fatalf("got %v, want exit 5; stderr:\n%s", res, e)
		}
		if len(lost) != 0 {
			t.Errorf("lost %v although the journal page had room", lost)
		}
	})
	t.Run("fills-during-run-tight", func(t *testing.T) {
		free()
		jp := filepath.Join(state, "gates", "tight", "journal.jsonl")
		os.WriteFile(nofill, nil, 0o644)
		runs := 0
		pad := func(extra ...string) []byte {
			t.Helper()
			runs++
			argv := append(append([]string{bin("cron-gate"), "tight", "--"}, fillCmd("tight")...), extra...)
			if res, _, e := run(t, env, argv...); res != (result{}) || e != "" {
				t.Fatalf("padding run: %v %s", res, e)
			}
			data, err := os.ReadFile(jp)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		// The sizes of this command's start and end records, from a run
		// with its own argv.
		data := pad()
		lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
		startLen, endLen := len(lines[len(lines)-2])+1, len(lines[len(lines)-1])+1
		// Then padding runs, each with one more argument ($0 of the sh
		// -c script, unused) whose length puts the room left in the
		// journal's last page in the middle of the window where the next
		// start record fits and the end record after it does not (the
		// argument appears in the start record only, as ,"xx…"). A
		// record's size varies by a few bytes between runs (times, pids),
		// well within the window; a miss is padded again.
		aligned := false
		for i := 0; i < 30 && !aligned; i++ {
			room := 4096 - len(data)%4096
			aligned = room >= startLen+8 && room-startLen < endLen-16
			if !aligned {
				target := 4096 - (startLen + endLen/2) // the journal's size mod 4096 we want
				k := ((target-(len(data)+startLen+endLen+3))%4096 + 4096) % 4096
				data = pad(strings.Repeat("x", max(k, 1)))
			}
		}
		os.Remove(nofill)
		if !aligned {
			t.Fatal("could not bring the journal to a page boundary in 30 runs")
		}
		t.Logf("journal brought to a page boundary in %d padding runs", runs)
		res, _, e, lost := gate(t, "tight", startEnd, fillCmd("tight")...)
		if res != (result{code: 5}) {
			t.Fatalf("got %v, want exit 5; stderr:\n%s", res, e)
		}
		if len(lost) != 1 || lost[0] != "end" {
			t.Errorf("lost %v, want the end record only", lost)
		}
	})

	// Space again: status reads every journal without error, nothing is
	// "running" (every cron-gate has exited), and a run whose end record
	// was lost is reported as vanished.
	free()
	res, out, e := run(t, env, bin("cron-gate"), "status", "--json")
	if res != (result{}) {
		t.Fatalf("status: %v %s", res, e)
	}
	var rep struct {
		Gates []struct {
			Name         string
			State        string
			JournalError string                    `json:"journal_error"`
			LastFailure  *struct{ Outcome string } `json:"last_failure"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, g := range rep.Gates {
		if g.State == "running" {
			t.Errorf("gate %s is shown running after every cron-gate exited: %s", g.Name, out)
		}
		// A record cut short by ENOSPC is left torn in the journal; the
		// README's rule applies: it is skipped and reported, never glued
		// to the next record.
		if g.JournalError != "" && !(g.Name == "tight" && strings.Contains(g.JournalError, "torn record")) {
			t.Errorf("gate %s: journal error %q", g.Name, g.JournalError)
		}
		recs := journalRecords(t, state, g.Name)
		if g.Name == "tight" && len(recs) > 0 && strings.HasSuffix(recs[len(recs)-1], " start") &&
			(g.LastFailure == nil || g.LastFailure.Outcome != "vanished") {
			t.Errorf("gate tight: its last run has no end record; want it reported as vanished: %s", out)
		}
	}
	// And the gates work normally again.
	for _, g := range []string{"fresh", "roomy", "tight", "logged"} {
		if res, _, e := run(t, env, bin("cron-gate"), g, "--", "true"); res != (result{}) || e != "" {
			t.Errorf("gate %s after freeing space: %v %s", g, res, e)
		}
	}
}
