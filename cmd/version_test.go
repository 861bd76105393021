package cmd

import (
	"runtime/debug"
	"testing"
)

// A binary built without -ldflags says a version or a commit, never dev
// alone when Go recorded either.
func TestVersionOf(t *testing.T) {
	vcs := func(revision, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified}}
	}
	const commit = "8ad10db0ce613c33d898243ef7905a0e75a95879"
	for _, tt := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{name: "set at link time, kept", linked: "1.4.0", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}}, want: "1.4.0"},
		{name: "go install …@v1.3.0", linked: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.3.0"}}, want: "v1.3.0"},
		{name: "go build in a checkout", linked: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128124410-8ad10db0ce61+dirty"}, Settings: vcs(commit, "true")},
			want: "v0.0.0-20261128124410-8ad10db0ce61+dirty"},
		{name: "no module version, a commit", linked: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(commit, "false")}, want: "dev-8ad10db0ce61"},
		{name: "no module version, a changed tree", linked: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(commit, "true")}, want: "dev-8ad10db0ce61+dirty"},
		{name: "nothing recorded", linked: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "dev"},
		{name: "no build information", linked: "dev", want: "dev"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionOf(tt.linked, tt.info); got != tt.want {
				t.Errorf("version %q, want %q", got, tt.want)
			}
		})
	}
}
