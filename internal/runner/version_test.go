package runner

import (
	"regexp"
	"testing"
)

// The link-time values win; without them the embedded VERSION file gives
// the version, and the commit is never empty.
func TestBuildString(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "", ""
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+\S* \(commit \S+\)$`).MatchString(BuildString()) {
		t.Errorf("BuildString() = %q without link-time values, want the VERSION file's version and a commit", BuildString())
	}
	Version, Commit = "9.8.7", "0123456789abcdef0123456789abcdef01234567"
	if got, want := BuildString(), "9.8.7 (commit 0123456789abcdef0123456789abcdef01234567)"; got != want {
		t.Errorf("BuildString() = %q, want %q", got, want)
	}
}
