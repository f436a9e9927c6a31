package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestCommandReference keeps docs/commands.md equal to the --help output of
// every command; run `go test ./cmd/minica -run Reference -update` after
// changing a command.
func TestCommandReference(t *testing.T) {
	t.Parallel()
	var doc bytes.Buffer
	doc.WriteString("# Command reference\n\n" +
		"Generated from `minica COMMAND --help`; `go test ./cmd/minica -run Reference -update` rewrites it.\n" +
		"Flags may come before or after positional arguments; after `--` every argument is\n" +
		"data, even `-h`. A NAME or FILE is always data, even `help`, `h`, `version` or\n" +
		"`completion`: `minica revoke help` revokes the certificate named help, and only\n" +
		"`--help` or `-h` before any `--` asks for help. Durations accept Go syntax\n" +
		"(`36h`, `90m`) plus days and years (`90d`, `10y`; a year is 365 days).\n" +
		"Exit status: 0 success, 1 failure, 2 usage error (unless a command says otherwise).\n")
	var walk func(path []string)
	walk = func(path []string) {
		e := newEnv()
		var out bytes.Buffer
		e.stdout, e.stderr = &out, &out
		args := append(append([]string{"minica"}, path...), "--help")
		if code := runInTest(context.Background(), args, e); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out.String())
		}
		title := strings.Join(append([]string{"minica"}, path...), " ")
		doc.WriteString("\n## " + title + "\n\n```\n" + strings.TrimRight(out.String(), "\n") + "\n```\n")
		app := newApp(e)
		cmds := app.Commands
		for _, name := range path {
			cmds = findCommand(cmds, name).Subcommands
		}
		for _, c := range cmds {
			walk(append(append([]string(nil), path...), c.Name))
		}
	}
	walk(nil)
	const file = "../../docs/commands.md"
	if *update {
		if err := os.WriteFile(file, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, doc.Bytes()) {
		t.Fatalf("docs/commands.md is out of date (%v); run: go test ./cmd/minica -run Reference -update", err)
	}
}
