//go:build linux

package etcdclient

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestOneP runs this test binary again with and without GOMAXPROCS in
// its environment: OneP leaves a set value alone and otherwise runs on
// one P.
func TestOneP(t *testing.T) {
	if os.Getenv("ONEPROC_CHILD") != "" {
		OneP()
		os.Stdout.WriteString(strconv.Itoa(runtime.GOMAXPROCS(0)) + "\n")
		return
	}
	for _, c := range []struct {
		env  string
		want string
	}{{"", "1"}, {"GOMAXPROCS=3", "3"}, {"GOMAXPROCS=", "1"}, {"GOMAXPROCS=zero", "1"}, {"GOMAXPROCS=-2", "1"}} {
		env := []string{"ONEPROC_CHILD=1"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOMAXPROCS=") {
				env = append(env, kv)
			}
		}
		if c.env != "" {
			env = append(env, c.env)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestOneP$")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", c.env, err)
		}
		if got := strings.SplitN(string(out), "\n", 2)[0]; got != c.want {
			t.Errorf("with %q in the environment: GOMAXPROCS %s, want %s", c.env, got, c.want)
		}
	}
}
