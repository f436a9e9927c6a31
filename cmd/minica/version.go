package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// versionFlag is the app's --version; the app's Before answers it.
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Usage: "print the version, the Go version and the build's VCS revision"}
}

func versionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "version",
		Usage:       "print the version, the Go version and the build's VCS revision",
		Description: "The same as 'minica --version'; the facts come from the binary's build information.\n\nExample:\n   minica version",
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			fmt.Fprint(e.stdout, versionText(debug.ReadBuildInfo()))
			return nil
		},
	}
}

// versionText describes the build: the module version ("(devel)" for a
// build from a clone), the Go toolchain, and the VCS revision with its time
// and whether the work tree had uncommitted changes.
func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "minica (unknown)\n  go        unknown\n  revision  unknown (the binary has no build information)\n"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	revision := "unknown (built without VCS information)"
	if r := vcs["vcs.revision"]; r != "" {
		var notes []string
		if t := vcs["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if vcs["vcs.modified"] == "true" {
			notes = append(notes, "modified")
		}
		revision = r
		if len(notes) > 0 {
			revision += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return fmt.Sprintf("minica %s\n  go        %s\n  revision  %s\n", version, info.GoVersion, revision)
}
