//go:build etcd

package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/etcdclient"
)

// The paused wrapper (docs/etcd.md, "Lock delay"): withlock-etcd itself is
// stopped (SIGSTOP; its command runs on) for 6 s, longer than its TTL
// (4 s), while a contender waits for its path. Without a lock delay the
// lease expires during the pause, the contender takes the path while the
// first command still runs (the overlap the fencing token exists for), and
// the woken wrapper finds its lease gone and exits 70 — the control, which
// shows the scenario bites. With --lock-delay 6s the lease outlives the
// pause (TTL + delay - TTL/3 > 6 s): the woken wrapper renews it, keeps its
// locks and finishes normally, and the contender runs only after it: no
// overlap.
func TestLockDelayPausedWrapper(t *testing.T) {
	need(t)
	for _, c := range []struct {
		delay   string
		overlap bool
	}{{"0s", true}, {"6s", false}} {
		t.Run("lock-delay="+c.delay, func(t *testing.T) {
			p := prefix(t)
			root := t.TempDir()
			post := filepath.Join(root, "post.md")
			os.WriteFile(post, nil, 0o644)
			mark := t.TempDir()
			release := filepath.Join(t.TempDir(), "release")
			env := []string{"ETCDTEST_WORKER=1", "ETCDTEST_MARK=" + mark}
			args := []string{"--key-prefix", p, "--key-root", root, "--ttl", "4s", "--lock-delay", c.delay, "--paths", post}
			a := command(append(env, "ETCDTEST_UNTIL="+release), "withlock-etcd", append(args, "--", self, "--", root, post)...)
			var aErr bytes.Buffer
			a.Stderr = &aErr
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			defer a.Process.Kill()
			aDone := make(chan struct{})
			go func() { a.Wait(); close(aDone) }()
			waitFor(t, 10*time.Second, "the first holder's key", func() bool { return len(keys(t, p)) == 1 })
			before := watchers(t)
			b := command(env, "withlock-etcd", append(args, "--wait", "60s", "--", self, "--", root, post)...)
			var bErr bytes.Buffer
			b.Stderr = &bErr
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			defer b.Process.Kill()
			bDone := make(chan struct{})
			go func() { b.Wait(); close(bDone) }()
			waitFor(t, 20*time.Second, "the contender to wait", func() bool { return watchers(t) > before })

			syscall.Kill(a.Process.Pid, syscall.SIGSTOP)
			time.Sleep(6 * time.Second) // the length of the pause, not a wait for anything
			syscall.Kill(a.Process.Pid, syscall.SIGCONT)
			if c.overlap {
				// Without a delay the contender got in while the
				// first holder was stopped: wait for it to end.
				select {
				case <-bDone:
				case <-time.After(time.Minute):
					t.Fatal("the contender did not finish")
				}
			}
			os.WriteFile(release, nil, 0o644)
			for _, d := range []chan struct{}{aDone, bDone} {
				select {
				case <-d:
				case <-time.After(time.Minute):
					t.Fatal("a holder did not finish within a minute")
				}
			}
			v, err := os.ReadFile(filepath.Join(mark, "VIOLATIONS"))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			aCode, bCode := exitCode(a, nil), exitCode(b, nil)
			t.Logf("first holder exit %d (%s); contender exit %d; overlaps: %q", aCode, strings.TrimSpace(aErr.String()), bCode, v)
			if c.overlap {
				if len(v) == 0 || aCode != 70 {
					t.Errorf("without a lock delay the pause must let the contender in (overlap %q) and the woken holder exit 70 (got %d): the scenario does not bite", v, aCode)
				}
				return
			}
			if len(v) != 0 {
				t.Errorf("overlap with --lock-delay %s: %s", c.delay, v)
			}
			if aCode != 0 || bCode != 0 {
				t.Errorf("exits %d and %d, want 0 and 0; first holder: %s; contender: %s", aCode, bCode, aErr.String(), bErr.String())
			}
			if !strings.Contains(aErr.String(), "had not expired, so the locks were kept") {
				t.Errorf("the woken holder does not say it renewed late: %q", aErr.String())
			}
		})
	}
}

// The paused wrapper whose command ends during the pause
// (docs/etcd.md, "Failure semantics"): withlock-etcd is stopped past its
// lease's expiry (TTL 2 s, no lock delay; the test waits until etcd has
// deleted the key), its command finishes meanwhile, and then it wakes.
// Another host could have taken the path while the command ran, so the
// run must exit 70 and say so — not the command's 0, which it did when
// the release (a revoke that finds the lease gone) came before the
// renewal that would have found it expired.
func TestPausedWrapperCommandEndedMeanwhile(t *testing.T) {
	need(t)
	p := prefix(t)
	dir := t.TempDir()
	started, release, done := filepath.Join(dir, "started"), filepath.Join(dir, "release"), filepath.Join(dir, "done")
	a := command(nil, "withlock-etcd", "--key-prefix", p, "--ttl", "2s", "--lock-delay", "0s", "--paths", "/srv/paused.md",
		"--", "sh", "-c", `: > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; : > "$3"`, "sh", started, release, done)
	var aErr bytes.Buffer
	a.Stderr = &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Process.Kill()
	aDone := make(chan struct{})
	go func() { a.Wait(); close(aDone) }()
	// Stopped once the command runs (the key is put before it starts).
	waitFor(t, 30*time.Second, "the holder's command to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	syscall.Kill(a.Process.Pid, syscall.SIGSTOP)
	defer syscall.Kill(a.Process.Pid, syscall.SIGCONT)
	waitFor(t, 30*time.Second, "the stopped holder's lease to expire", func() bool { return len(keys(t, p)) == 0 })
	os.WriteFile(release, nil, 0o644)
	waitFor(t, 30*time.Second, "the command to end while withlock-etcd is stopped", func() bool {
		_, err := os.Stat(done)
		return err == nil
	})
	syscall.Kill(a.Process.Pid, syscall.SIGCONT)
	select {
	case <-aDone:
	case <-time.After(time.Minute):
		t.Fatal("the woken holder did not exit within a minute")
	}
	t.Logf("the woken holder exited %d: %s", exitCode(a, nil), strings.TrimSpace(aErr.String()))
	if code := exitCode(a, nil); code != 70 || !strings.Contains(aErr.String(), "lost the etcd lease") {
		t.Errorf("the woken holder exited %d, want 70 and a message that the lease was lost: %q", code, aErr.String())
	}
}

// Every call warns, once, when a member runs a server older than the
// minimum safe version (etcd issue #15247), and only then: withlock-etcd
// on stderr, cron-gate on stderr and in the run's start record. Against
// Debian's 3.4.23 it warns; against the suite's 3.6+ build it does not.
func TestVersionWarning(t *testing.T) {
	need(t)
	cli, err := cl.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	old := false
	for _, ep := range cl.Endpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		safe, known := etcdclient.SafeVersion(st.Version)
		if !known {
			t.Fatalf("member %s says version %q", ep, st.Version)
		}
		old = old || !safe
		t.Logf("member %s runs etcd %s (safe: %v)", ep, st.Version, safe)
	}
	want := 0
	if old {
		want = 1
	}
	const says = "etcd issue #15247"
	r := run(t, nil, "withlock-etcd", "--key-prefix", prefix(t), "--paths", "/srv/version.md", "--", "true")
	if r.code != 0 || strings.Count(r.stderr, says) != want {
		t.Errorf("withlock-etcd: exit %d, %d warning(s), want %d: %q", r.code, strings.Count(r.stderr, says), want, r.stderr)
	}
	h := newCGHost(t, "v", "")
	r = h.cg("g", "--", "true")
	if r.code != 0 || strings.Count(r.stderr, says) != want {
		t.Errorf("cron-gate: exit %d, %d warning(s), want %d: %q", r.code, strings.Count(r.stderr, says), want, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(h.dir, "state", "gates", "g", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for line := range strings.Lines(string(data)) {
		var rec struct{ Event, Detail string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Event == "start" && strings.Contains(rec.Detail, says) {
			recorded++
		}
	}
	if recorded != want {
		t.Errorf("the journal's start records carry the warning %d time(s), want %d:\n%s", recorded, want, data)
	}
}
