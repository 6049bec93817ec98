package runner

import (
	"reflect"
	"testing"
)

// The first "--" ends the wrapper's flags; everything after it is the
// command, untouched, later "--" included.
func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		args, flags, command []string
		found                bool
	}{
		{[]string{"-v", "--", "sh", "-c", "x", "--", "y"}, []string{"-v"}, []string{"sh", "-c", "x", "--", "y"}, true},
		{[]string{"--"}, []string{}, []string{}, true},
		{[]string{"--paths", "a"}, []string{"--paths", "a"}, nil, false},
		{nil, nil, nil, false},
	} {
		flags, command, found := SplitCommand(c.args)
		if !reflect.DeepEqual(flags, c.flags) || !reflect.DeepEqual(command, c.command) || found != c.found {
			t.Errorf("SplitCommand(%q) = %q, %q, %v; want %q, %q, %v", c.args, flags, command, found, c.flags, c.command, c.found)
		}
	}
}
