package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionText(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false,
			"minica (unknown)\n  go        unknown\n  revision  unknown (the binary has no build information)\n"},
		{"clone without vcs", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, true,
			"minica (devel)\n  go        go1.26.0\n  revision  unknown (built without VCS information)\n"},
		{"empty version", &debug.BuildInfo{GoVersion: "go1.26.0"}, true,
			"minica (devel)\n  go        go1.26.0\n  revision  unknown (built without VCS information)\n"},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e52abff0"}, {Key: "vcs.time", Value: "2026-12-01T16:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, true,
			"minica (devel)\n  go        go1.26.1\n  revision  e52abff0 (2026-12-01T16:00:00Z)\n"},
		{"modified tree", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "e52abff0"}, {Key: "vcs.modified", Value: "true"},
		}}, true,
			"minica v1.2.0\n  go        go1.26.1\n  revision  e52abff0 (modified)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.info, tt.ok); got != tt.want {
				t.Errorf("versionText() = %q; want %q", got, tt.want)
			}
		})
	}
}
