package main

import "testing"

func TestWantsEtcd(t *testing.T) {
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
		if got := wantsEtcd(c.args); got != c.want {
			t.Errorf("WITHLOCK_BACKEND=%q %q: %v, want %v", c.env, c.args, got, c.want)
		}
	}
}

// The local path's whole cost of the etcd backend: one scan of the flags.
func BenchmarkDispatchLocal(b *testing.B) {
	args := []string{"--slots", "6", "--slot-file", "/tmp/dependency-classifier-slot-{i}.lock", "--paths", "/srv/blog/ko/a.md,/srv/blog/en/a.md", "--", "python3", "dependency_classifier.py"}
	for b.Loop() {
		if _, done := dispatch(args, nil); done {
			b.Fatal("dispatched")
		}
	}
}

func TestDispatchRefusesUnknownEnv(t *testing.T) {
	t.Setenv("WITHLOCK_BACKEND", "bogus")
	if code, done := dispatch([]string{"--paths", "a", "--", "true"}, nil); !done || code != 125 {
		t.Errorf("WITHLOCK_BACKEND=bogus: %d %v, want 125", code, done)
	}
	// A flag wins over the environment (an unknown flag value is the
	// parser's to refuse).
	if _, done := dispatch([]string{"--backend", "local", "--", "true"}, nil); done {
		t.Error("--backend local under WITHLOCK_BACKEND=bogus was not left to withlock")
	}
	t.Setenv("WITHLOCK_BACKEND", "local")
	if _, done := dispatch([]string{"--paths", "a", "--", "true"}, nil); done {
		t.Error("WITHLOCK_BACKEND=local was not left to withlock")
	}
}
