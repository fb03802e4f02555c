package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "3ef687f0123456789abcdef0123456789abcdef0"}}
	dirty := append(rev[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	clean := append(rev[:2:2], debug.BuildSetting{Key: "vcs.modified", Value: "false"})
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}, "v0.3.0"},
		{"go build in a clone (Go 1.24+)", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126081700-3ef687f01234+dirty"}, Settings: dirty}, "v0.0.0-20261126081700-3ef687f01234+dirty"},
		{"clone, tree changed", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty}, "3ef687f01234+dirty"},
		{"clone, clean tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: clean}, "3ef687f01234"},
		{"-buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"no build info", nil, "devel"},
	} {
		if got := version(tt.bi); got != tt.want {
			t.Errorf("%s: version = %q, want %q", tt.name, got, tt.want)
		}
	}
}
