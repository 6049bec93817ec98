// Package buildinfo tells which version a binary is.
package buildinfo

import "runtime/debug"

// Version is set at link time with
// -ldflags "-X github.com/crongate/crongate/buildinfo.Version=v1.2.3".
var Version = ""

// String returns Version, else the module version or VCS revision recorded
// by the Go toolchain, else "devel".
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
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
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}
