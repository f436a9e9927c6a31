package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// urfave/cli keeps parse state on a flag's value (Apply records its
// default, an environment variable sets HasBeenSet), so a flag value shared
// by two commands, or two runs in one process, leaks state from one to the
// other. Every command must get flag values of its own.
func TestFlagValuesAreNotShared(t *testing.T) {
	seen := map[cli.Flag]string{}
	var walk func(where string, cmds []*cli.Command)
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			if f == cli.HelpFlag || f == cli.BashCompletionFlag {
				continue // the library's own, never parsed as ours
			}
			if prev, ok := seen[f]; ok {
				t.Errorf("--%s of %q is the same value as in %q", f.Names()[0], where, prev)
				continue
			}
			seen[f] = where
		}
	}
	walk = func(where string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			name := strings.TrimSpace(where + " " + cmd.Name)
			check(name, cmd.Flags)
			walk(name, cmd.Subcommands)
		}
	}
	for _, run := range []string{"first app", "second app"} {
		app := newApp(testEnv())
		check(run, app.Flags)
		walk(run, app.Commands)
	}
}
