package withlock

import (
	"strings"
	"testing"

	"github.com/crongate/crongate/internal/runner"
)

// chosenBackend reads --backend from withlock's flags only (never the
// command's), the last one winning, else $WITHLOCK_BACKEND.
func TestChosenBackend(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want bool
	}{
		{"", []string{"--paths", "a", "--", "true"}, false},
		{"", []string{"--backend", "etcd", "--", "true"}, true},
		{"", []string{"--backend=etcd", "--paths", "a"}, true},
		{"", []string{"--backend", "local"}, false},
		{"", []string{"--backend", "etcd", "--backend", "local"}, false},
		{"", []string{"--backend", "--", "etcd"}, false},
		{"", []string{"--paths", "a", "--", "--backend", "etcd"}, false},
		{"", []string{"--backend"}, false},
		{"etcd", []string{"--paths", "a"}, true},
		{"etcd", []string{"--backend", "local"}, false},
		{"local", []string{"--backend=etcd"}, true},
		{"etcd", []string{"--", "--backend", "local"}, true},
	} {
		t.Setenv("WITHLOCK_BACKEND", c.env)
		if got, _ := chosenBackend(c.args); (got == "etcd") != c.want {
			t.Errorf("WITHLOCK_BACKEND=%q %q: chose %q; want etcd: %v", c.env, c.args, got, c.want)
		}
	}
}

// The local path's whole cost of the etcd backend: one scan of the flags.
func BenchmarkDispatchLocal(b *testing.B) {
	args := []string{"--slots", "6", "--slot-file", "/tmp/dependency-classifier-slot-{i}.lock", "--paths", "/srv/blog/ko/a.md,/srv/blog/en/a.md", "--", "python3", "dependency_classifier.py"}
	for b.Loop() {
		if _, done := Dispatch(args); done {
			b.Fatal("dispatched")
		}
	}
}

func TestDispatchRefusesUnknownEnv(t *testing.T) {
	t.Setenv("WITHLOCK_BACKEND", "bogus")
	if code, done := Dispatch([]string{"--paths", "a", "--", "true"}); !done || code != runner.ExitFailure {
		t.Errorf("WITHLOCK_BACKEND=bogus: %d %v, want 125", code, done)
	}
	// A flag wins over the environment (an unknown flag value is the
	// parser's to refuse).
	if _, done := Dispatch([]string{"--backend", "local", "--", "true"}); done {
		t.Error("--backend local under WITHLOCK_BACKEND=bogus was not left to withlock")
	}
	t.Setenv("WITHLOCK_BACKEND", "local")
	if _, done := Dispatch([]string{"--paths", "a", "--", "true"}); done {
		t.Error("WITHLOCK_BACKEND=local was not left to withlock")
	}
}

// configured is a Driver for Check's tests: it records Configure.
type configured struct {
	name string
	ran  *bool
}

func (d configured) Name() string                { return d.name }
func (d configured) Open(*Options) (Conn, error) { return nil, nil }
func (d configured) Configure(*Options) error    { *d.ran = true; return nil }

// Check applies one rule in every program: --backend, else
// $WITHLOCK_BACKEND, else the program's own backend; the backend must be
// in the registry and be the program's; another backend's flags are
// refused; the program's driver then configures its own.
func TestCheckBackend(t *testing.T) {
	for _, c := range []struct {
		env, flag, driver string
		ttl               bool
		want              string // the error, or the backend chosen after "="
	}{
		{"", "", "local", false, "=local"},
		{"", "", "etcd", false, "=etcd"},
		{"local", "", "local", false, "=local"},
		{"etcd", "", "etcd", false, "=etcd"},
		{"etcd", "local", "local", false, "=local"},
		{"", "", "etcd", true, "=etcd"},
		{"", "", "local", true, "--ttl needs --backend etcd"},
		{"etcd", "", "local", false, "--backend etcd is run by withlock-etcd: call withlock (which hands it over) or withlock-etcd"},
		{"", "etcd", "local", false, "--backend etcd is run by withlock-etcd: call withlock (which hands it over) or withlock-etcd"},
		{"", "local", "etcd", false, "--backend local is run by withlock: call withlock"},
		{"bogus", "", "local", false, `WITHLOCK_BACKEND="bogus": use local or etcd`},
		{"bogus", "", "etcd", false, `WITHLOCK_BACKEND="bogus": use local or etcd`},
		{"", "bogus", "local", false, `--backend "bogus": use local or etcd`},
	} {
		t.Setenv("WITHLOCK_BACKEND", c.env)
		o := Options{Command: []string{"true"}}
		o.Paths, o.LockDir, o.Backend = []string{"a"}, DefaultLockDir, c.flag
		if c.ttl {
			o.TTL = 5e9
		}
		ran := false
		got := ""
		if err := o.Check(true, configured{c.driver, &ran}); err != nil {
			got = err.Error()
		} else {
			got = "=" + o.Backend
		}
		if got != c.want || ran != (got[0] == '=') {
			t.Errorf("env %q, --backend %q, program for %s: %q (configured %v), want %q", c.env, c.flag, c.driver, got, ran, c.want)
		}
		// A backend that does not exist is said before what else is
		// wrong with the line (here: nothing to lock).
		if strings.HasPrefix(c.want, "=") {
			continue
		}
		o = Options{Command: []string{"true"}, CLI: CLI{LockDir: DefaultLockDir, Backend: c.flag}}
		if err := o.Check(true, configured{c.driver, &ran}); strings.Contains(c.want, "use local or etcd") && (err == nil || err.Error() != c.want) {
			t.Errorf("env %q, --backend %q, no paths: %v, want %q", c.env, c.flag, err, c.want)
		}
	}
}
