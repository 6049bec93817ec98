package tests

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestWithlock runs the scripts in testdata/withlock against the real
// withlock binary built by TestMain. Each script is one feature; see the
// comments in the scripts for what each phase proves.
func TestWithlock(t *testing.T) {
	t.Parallel() // the three script suites share one pool of -parallel slots
	testscript.Run(t, testscript.Params{
		Dir:       "testdata/withlock",
		Setup:     setupScript,
		Cmds:      scriptCmds(),
		Condition: scriptCondition,
	})
}
