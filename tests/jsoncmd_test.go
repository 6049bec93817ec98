package tests

import (
	"regexp"
	"testing"
)

// TestJSONNotVacuous holds the json script command to its rule that no
// assertion holds vacuously: a path that selects nothing because the file
// is not what the script thinks fails "json" and "! json" alike; an empty
// selection counts as "absent" only when the path's parent is there.
func TestJSONNotVacuous(t *testing.T) {
	doc := []byte(`{"gates":[{"name":"g","state":"ok","skips":{}}]}` + "\n")
	for _, c := range []struct {
		neg, count bool
		path, re   string // re "" means no REGEX
		ok         bool
	}{
		{false, false, "gates.0.state", "^ok$", true},
		{false, false, "gates[name=g].state", "", true},
		{false, false, "gates[name=g].statee", "", false},
		{false, false, "gates.0.nope", "^$", false},         // an empty selection renders "", which ^$ matches
		{true, false, "gates.0.state", "^paused$", true},    // selected, does not match
		{true, false, "gates.0.statee", "^paused$", false},  // selects nothing: proves nothing
		{true, false, "gates[name=x].state", "^ok$", false}, // no gate x: proves nothing
		{true, false, "gates.0.last_failure", "", true},     // absent, and gates.0 is there
		{true, false, "gatez.0.last_failure", "", false},    // absent because gatez is not there
		{true, false, "gates[name=x].last_failure", "", false},
		{true, false, "gates.0.state", "", false},    // present
		{false, true, "gates[name=x]", "^0$", true},  // none, and gates is there
		{false, true, "gatez[name=x]", "^0$", false}, // none because gatez is not there
		{false, true, "gates.*", "^1$", true},
		{true, true, "gatez[name=x]", "^1$", false},
		{true, false, "warnings", "", true}, // one segment: its parent is the document
	} {
		vals, parent, err := jsonEval(doc, c.path)
		if err != nil {
			t.Fatal(err)
		}
		var re *regexp.Regexp
		if c.re != "" {
			re = regexp.MustCompile(c.re)
		}
		_, err = jsonCheck(c.neg, c.count, vals, parent, re)
		if (err == nil) != c.ok {
			t.Errorf("neg=%v count=%v %s %q: error %v, want ok=%v", c.neg, c.count, c.path, c.re, err, c.ok)
		}
	}
	// A filter value cannot hold "]": such a path is an error, not a
	// selection of nothing.
	if _, _, err := jsonEval(doc, `gates[argv=["a"]]`); err == nil {
		t.Errorf(`gates[argv=["a"]] parsed`)
	}
}
