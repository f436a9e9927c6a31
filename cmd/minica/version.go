package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// versionFlag is the app's --version; the app's Before answers it.
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Usage: "print the version, the Go version, the build's VCS revision and whether it can use a PKCS#11 token"}
}

func versionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "version",
		Usage:       "print the version, the Go version, the build's VCS revision and whether it can use a PKCS#11 token",
		Description: "The same as 'minica --version'; the facts come from the binary's build information.\n\nExample:\n   minica version",
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			fmt.Fprint(e.stdout, buildVersionText())
			return nil
		},
	}
}

// buildVersionText is versionText for this binary.
func buildVersionText() string {
	info, ok := debug.ReadBuildInfo()
	return versionText(info, ok, ca.PKCS11Supported)
}

// versionText describes the build: the module version ("(devel)" for a
// build from a clone), the Go toolchain, the VCS revision with its time
// and whether the work tree had uncommitted changes, and whether the build
// can use a CA key in a PKCS#11 token (pkcs11), which only a cgo build can:
// a person who needs a token learns it here rather than at the first
// signature.
func versionText(info *debug.BuildInfo, ok, pkcs11 bool) string {
	if !ok {
		return "minica (unknown)\n  go        unknown\n  revision  unknown (the binary has no build information)\n" + pkcs11Line(pkcs11)
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
	return fmt.Sprintf("minica %s\n  go        %s\n  revision  %s\n", version, info.GoVersion, revision) + pkcs11Line(pkcs11)
}

// pkcs11Line is versionText's last line: whether this build can use a CA
// key in a PKCS#11 token, and if not, the build that can.
func pkcs11Line(supported bool) string {
	if supported {
		return "  pkcs11    yes (a cgo build: CA keys can live in a PKCS#11 token)\n"
	}
	return "  pkcs11    no (built without cgo; for a CA key in a token build with CGO_ENABLED=1 go build ./cmd/minica)\n"
}
