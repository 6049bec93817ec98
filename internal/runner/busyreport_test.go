package runner

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBusyReportRoundTrip: what a withlock writes into the memory file
// cron-gate handed it is what cron-gate reads back; an empty file, junk,
// a relative or unclean lock file, a lock with both or neither of path
// and pool, unknown keys, a second object and another version read as no
// report.
func TestBusyReportRoundTrip(t *testing.T) {
	f, env, err := NewBusyReport(3)
	if err != nil {
		t.Fatalf("NewBusyReport: %v", err)
	}
	defer f.Close()
	if env != BusyEnv+"=3" {
		t.Fatalf("env %q", env)
	}
	if d := ReadBusyReport(f); d != nil {
		t.Fatalf("empty file read as %+v", d)
	}
	// As withlock takes it: the variable names the descriptor (a copy,
	// which the BusyReport owns and closes, as withlock's inherited one).
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(BusyEnv, strconv.Itoa(fd))
	r := TakeBusyReport()
	if r == nil {
		t.Fatal("TakeBusyReport refused cron-gate's memory file")
	}
	defer r.f.Close()
	if _, set := os.LookupEnv(BusyEnv); set {
		t.Errorf("%s still set after TakeBusyReport", BusyEnv)
	}
	r.Write(BusyReportData{Locks: []BusyLock{{Path: "/srv/a.md", File: "/l/a.lock"}, {Pool: "/l/s-{i}", File: "/l/s-0"}}, More: 2})
	r.Write(BusyReportData{Locks: []BusyLock{{Path: "/srv/b.md", File: "/l/b.lock"}}, More: 1}) // replaces, not appends
	d := ReadBusyReport(f)
	if d == nil || len(d.Locks) != 1 || d.Locks[0] != (BusyLock{Path: "/srv/b.md", File: "/l/b.lock"}) || d.More != 1 {
		t.Fatalf("read back %+v", d)
	}
	for _, bad := range []string{
		``, `junk`, `{}`, `{"v":1,"locks":[]}`, `{"v":2,"locks":[{"path":"/a","file":"/l"}]}`,
		`{"v":1,"locks":[{"path":"/a","file":"l"}]}`, `{"v":1,"locks":[{"path":"/a","file":"/l/../x"}]}`,
		`{"v":1,"locks":[{"path":"/a","pool":"/p","file":"/l"}]}`, `{"v":1,"locks":[{"file":"/l"}]}`,
		`{"v":1,"locks":[{"path":"/a","file":"/l","x":1}]}`, `{"v":1,"locks":[{"path":"/a","file":"/l"}]}{}`,
		`{"v":1,"locks":[{"path":"/a","file":"/l"}],"more":-1}`, "{\"v\":1,\"locks\":[{\"path\":\"/a\\u0000\",\"file\":\"/l\"}]}",
	} {
		if d := ParseBusyReport([]byte(bad)); d != nil {
			t.Errorf("%s parsed as %+v", bad, d)
		}
	}
}

// TestTakeBusyReportOnlyItsOwn: a variable that names a descriptor that
// is not the report (a file, a bad number, a closed descriptor) is
// dropped and nothing is written anywhere.
func TestTakeBusyReportOnlyItsOwn(t *testing.T) {
	other, err := os.CreateTemp(t.TempDir(), "victim")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, v := range []string{strconv.Itoa(int(other.Fd())), "x", "1", "-3", "999999"} {
		t.Setenv(BusyEnv, v)
		if r := TakeBusyReport(); r != nil {
			t.Errorf("%s=%s taken", BusyEnv, v)
		}
		if _, set := os.LookupEnv(BusyEnv); set {
			t.Errorf("%s=%s left set", BusyEnv, v)
		}
	}
	var none *BusyReport
	none.Write(BusyReportData{Locks: []BusyLock{{Path: "/a", File: "/l"}}}) // no report: nothing, no panic
	if st, _ := other.Stat(); st.Size() != 0 {
		t.Errorf("the other file was written: %d bytes", st.Size())
	}
}

// FuzzParseBusyReport: a report is the job's own bytes; no input panics,
// and whatever is accepted holds the rules ParseBusyReport states.
func FuzzParseBusyReport(f *testing.F) {
	f.Add([]byte(`{"v":1,"locks":[{"path":"/srv/a.md","file":"/l/a.lock"},{"pool":"/l/s-{i}","file":"/l/s-0"}],"more":3}`))
	f.Add([]byte(`{"v":1,"locks":[{"path":"/a","file":"l"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := ParseBusyReport(b)
		if d == nil {
			return
		}
		if d.V != 1 || len(d.Locks) == 0 || len(d.Locks) > maxBusyLocks || d.More < 0 {
			t.Fatalf("accepted %+v", d)
		}
		for _, l := range d.Locks {
			if l.File == "" || l.File[0] != '/' || (l.Path == "") == (l.Pool == "") {
				t.Fatalf("accepted lock %+v", l)
			}
		}
	})
}
