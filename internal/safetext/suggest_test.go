package safetext

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	known := []string{"translate", "classifier", "paused", "reason"}
	for k, want := range map[string]string{
		"tranlsate": "translate", "clasifier": "classifier", "PAUSD": "paused",
		"zzz": "", "": "", strings.Repeat("a", 65): "", "reasons": "reason",
	} {
		if got := Closest(k, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", k, got, want)
		}
	}
	if got := Closest("ab", []string{"xb", "ax"}); got != "xb" {
		t.Errorf("a tie: %q, want the first", got)
	}
}
