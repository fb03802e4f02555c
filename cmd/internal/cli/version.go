package cli

import (
	"runtime/debug"
)

// Version is the running program's version, as --version and toolsift
// serve's serverInfo report it: the module version when the program was
// built by `go install ...@version` (or the pseudo-version the go command
// derives from the clone's commit, "+dirty" included), else the VCS
// revision of the clone it was built from (12 digits, "+dirty" when the
// tree had changes), else "devel" (built with -buildvcs=false, or outside
// a repository).
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return version(bi)
}

func version(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return rev[:min(len(rev), 12)] + dirty
}
