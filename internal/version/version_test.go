package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bi          debug.BuildInfo
		str, short  string
		wantCommit  string
		wantModifed bool
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"v0.3.0 go1.26.8", "v0.3.0", "", false},
		{"clone", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "239b220c1d2e3f4a5b6c7d8e9f00112233445566"},
			{Key: "vcs.time", Value: "2026-12-02T04:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) commit 239b220c1d2e (modified) go1.26.8", "(devel)+239b220c1d2e-dirty", "239b220c1d2e3f4a5b6c7d8e9f00112233445566", true},
		{"no main version", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}},
			"(devel) commit abc", "(devel)+abc", "abc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := fromBuildInfo(&tc.bi)
			if i.String() != tc.str || i.Short() != tc.short || i.Commit != tc.wantCommit || i.Modified != tc.wantModifed {
				t.Fatalf("got %+v: %q %q", i, i.String(), i.Short())
			}
		})
	}
}
