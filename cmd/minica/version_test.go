package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionText(t *testing.T) {
	// The last line says whether a CA key in a PKCS#11 token can be used,
	// and names the build that can when this one cannot.
	const (
		token   = "  pkcs11    yes (a cgo build: CA keys can live in a PKCS#11 token)\n"
		noToken = "  pkcs11    no (built without cgo; for a CA key in a token build with CGO_ENABLED=1 go build ./cmd/minica)\n"
	)
	tests := []struct {
		name   string
		info   *debug.BuildInfo
		ok     bool
		pkcs11 bool
		want   string
	}{
		{"no build info", nil, false,
			false, "minica (unknown)\n  go        unknown\n  revision  unknown (the binary has no build information)\n" + noToken},
		{"clone without vcs", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, true, false,
			"minica (devel)\n  go        go1.26.0\n  revision  unknown (built without VCS information)\n" + noToken},
		{"empty version", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, true,
			"minica (devel)\n  go        go1.26.0\n  revision  unknown (built without VCS information)\n" + token},
		{"clean checkout", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e52abff0"}, {Key: "vcs.time", Value: "2026-12-01T16:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, true, true,
			"minica (devel)\n  go        go1.26.1\n  revision  e52abff0 (2026-12-01T16:00:00Z)\n" + token},
		{"modified tree", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "e52abff0"}, {Key: "vcs.modified", Value: "true"},
		}}, true, false,
			"minica v1.2.0\n  go        go1.26.1\n  revision  e52abff0 (modified)\n" + noToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.info, tt.ok, tt.pkcs11); got != tt.want {
				t.Errorf("versionText() = %q; want %q", got, tt.want)
			}
		})
	}
}
