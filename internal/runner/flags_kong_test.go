package runner_test

import (
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/tests/kongtest"
)

// sample has a field of every kind FastParse reads, and names kong
// splits in each way.
type sample struct {
	runner.TimeoutFlags
	runner.OutputFlags
	CAFile    string        `placeholder:"FILE" help:"x"`
	TTL       time.Duration `name:"ttl" help:"x"`
	EtcdUser  string        `env:"RUNNER_TEST_USER" help:"x"`
	JSON      bool          `help:"x"`
	X2Y       int           `default:"${n}" help:"x"`
	Paths     []string      `short:"p" sep:"none" help:"x"`
	Endpoints []string      `help:"x"`
	Slots     []int         `sep:"none" help:"x"`
	Mode      string        `enum:"a,b" default:"a" help:"x"`
	Name      string        `arg:"" help:"x"`
}

var sampleVars = map[string]string{"killafter": "10s", "n": "7", "verbose_more": "", "quiet_more": ""}

// TestFastParseAsKong: every flag is found under the name kong gives it
// (ca-file, ttl, etcd-user, json, x-2-y, kill-after), defaults and the
// environment are filled in, and what FastParse accepts kong reads the
// same; what it declines (bundled or repeated flags, enum:, an empty
// value, a value it is not sure of, two positionals, none) it leaves.
func TestFastParseAsKong(t *testing.T) {
	t.Setenv("RUNNER_TEST_USER", "env-user")
	accept := [][]string{
		{"n"},
		{"--ca-file", "/ca.pem", "--ttl=5s", "--etcd-user", "u", "--json", "--x-2-y", "3", "n"},
		{"-p", "a", "--paths=b,c", "--endpoints", "x,y", "--slots", "2", "--slots=4", "-v", "-q", "n"},
		{"--timeout", "90m", "--kill-after=2s", "n", "--paths", "-"},
	}
	for _, args := range accept {
		var fast sample
		if !runner.FastParse(args, &fast, sampleVars) {
			t.Errorf("declined %q", args)
			continue
		}
		fast.Mode = "a" // enum: a field FastParse leaves unread (kong's default)
		kongtest.Agree(t, &fast, args, kong.Vars(sampleVars))
	}
	// Every flag of kong's model but help and the enum, by kong's name.
	var m sample
	k, err := kong.New(&m, kong.Vars(sampleVars))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"timeout": "1s", "kill-after": "1s", "ttl": "1s", "x-2-y": "1", "slots": "1"}
	for _, f := range k.Model.Flags {
		if f.Name == "help" || f.Name == "mode" {
			continue
		}
		args := []string{"--" + f.Name, "n"}
		if !f.IsBool() {
			v := values[f.Name]
			if v == "" {
				v = "v"
			}
			args = []string{"--" + f.Name + "=" + v, "n"}
		}
		var s sample
		if !runner.FastParse(args, &s, sampleVars) {
			t.Errorf("kong's flag --%s: %q declined", f.Name, args)
		}
	}
	var d sample
	if runner.FastParse([]string{"n"}, &d, sampleVars); d.KillAfter != 10*time.Second || d.X2Y != 7 || d.EtcdUser != "env-user" {
		t.Errorf("defaults and environment: %+v", d)
	}
	for _, args := range [][]string{
		{}, {"a", "b"}, {"-qv", "n"}, {"-q", "-q", "n"}, {"--json=true", "n"}, {"--mode", "b", "n"}, {"--ca-file=", "n"},
		{"--ca-file", "--json", "n"}, {"--x-2-y", "010", "n"}, {"--endpoints", "a,,b", "n"}, {"--endpoints", `a\,b`, "n"},
		{"--ttl", "5s", "--ttl", "6s", "n"}, {"--bogus", "n"}, {"--help"}, {"-h", "n"}, {"--timeout", "5x", "n"},
	} {
		var s sample
		if runner.FastParse(args, &s, sampleVars) {
			t.Errorf("accepted %q; it must leave it to kong", args)
		}
	}
	if runner.FastParse([]string{"n"}, &d, map[string]string{}) {
		t.Error("accepted a default naming a variable it was not given")
	}
}
