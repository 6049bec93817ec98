package runner

// The build: which version a binary is and which commit it
// was built from, for every binary's --version and for keys that must
// change with the code (the config cache).

import (
	_ "embed" // the VERSION file
	"runtime/debug"
	"strings"
)

// Version is the release version. The Makefile and the release scripts
// set it at link time with
// -ldflags "-X github.com/crongate/crongate/internal/runner.Version=0.1.0";
// when empty, the VERSION file next to this source (embedded, so that a
// plain `go build` of a source tarball knows its version too) is used.
var Version = ""

// Commit is the full hash of the commit the binary was built from, set at
// link time with -ldflags "-X
// github.com/crongate/crongate/internal/runner.Commit=HASH" (the
// Makefile takes it from git, else from the COMMIT file that `git archive`
// fills in); when empty, the VCS revision the Go toolchain recorded is
// used, if any.
var Commit = ""

//go:embed VERSION
var versionFile string

// VersionString returns Version, else the VERSION file's first line, else
// "devel".
func VersionString() string {
	if Version != "" {
		return Version
	}
	if v, _, _ := strings.Cut(versionFile, "\n"); strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return "devel"
}

// CommitString returns Commit, else the VCS revision recorded by the Go
// toolchain (with "-dirty" when the tree had uncommitted changes), else
// "unknown".
func CommitString() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// BuildString is what --version prints after the program's name: the version
// and the commit, as in "0.1.0 (commit 0123abc...)". It never is empty.
func BuildString() string {
	return VersionString() + " (commit " + CommitString() + ")"
}
