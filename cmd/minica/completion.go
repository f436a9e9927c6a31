package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/identity"
	"minica/revoke"
)

// maxCompletionNames and maxCompletionRecords bound what completion reads
// of the database: it streams records, stops at either, and prints the
// names sorted.
const (
	maxCompletionNames   = 1000
	maxCompletionRecords = 100000
)

// complete answers --generate-bash-completion (tokens are the command line
// before it, without the program) where urfave/cli cannot: the values of an
// enum flag, and certificate names where a command takes a NAME. It
// reports false to leave the rest (subcommands, flags) to urfave/cli.
func complete(app *cli.App, tokens []string, w io.Writer) bool {
	cmd := leafCommand(app, tokens)
	if len(tokens) > 0 {
		last := tokens[len(tokens)-1]
		if isFlag(last) && !strings.Contains(last, "=") {
			var f cli.Flag
			if cmd != nil {
				f = findFlag(cmd.Flags, last)
			}
			if f == nil {
				f = findFlag(app.Flags, last)
			}
			if f == nil || !takesValue(f, last) {
				return false // a flag being typed: urfave/cli lists them
			}
			for _, v := range flagValues(cmd, flagName(last)) {
				fmt.Fprintln(w, v)
			}
			return true
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 || !takesCertName(cmd) {
		return false
	}
	if positionals(app, cmd, tokens) > 0 {
		return true
	}
	authority, err := ca.OpenWith(completionDir(tokens), ca.OpenOptions{Engines: storeEngines()})
	if err != nil {
		return true
	}
	defer authority.Close()
	seen := map[string]bool{}
	var names []string
	n := 0
	for r, err := range authority.Records() {
		if err != nil || len(names) == maxCompletionNames || n == maxCompletionRecords {
			break
		}
		n++
		if !seen[r.Name] {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintln(w, name)
	}
	return true
}

// flagValues are the values an enum flag of cmd takes, nil for free text.
func flagValues(cmd *cli.Command, flag string) []string {
	switch flag {
	case "reason":
		return revoke.ReasonNames()
	case "status":
		return []string{string(ca.StatusValid), string(ca.StatusRevoked), string(ca.StatusExpired), string(ca.StatusPending), string(ca.StatusVoid)}
	case "profile":
		if cmd != nil && (cmd.Name == "list" || cmd.Name == "sign") {
			return []string{string(ca.Server), string(ca.Client)}
		}
		return []string{"modern", "compat"}
	case "p12-profile":
		return []string{"modern", "compat"}
	case "key-type":
		var out []string
		for _, kt := range ca.KeyTypes {
			out = append(out, string(kt))
		}
		return out
	case "headers":
		return identity.Profiles
	}
	return nil
}

// takesCertName reports whether cmd's argument is an issued certificate's
// name (revoke, show, verify, export p12), not a new one (issue).
func takesCertName(cmd *cli.Command) bool {
	return strings.Contains(cmd.ArgsUsage, "NAME|") || strings.Contains(cmd.ArgsUsage, "|NAME")
}

// leafCommand is the innermost command that tokens name, nil for none.
func leafCommand(app *cli.App, tokens []string) *cli.Command {
	path, _ := commandPath(app, tokens)
	var cmd *cli.Command
	cmds := app.Commands
	for _, i := range path {
		cmd = findCommand(cmds, tokens[i])
		cmds = cmd.Subcommands
	}
	return cmd
}

// positionals counts the arguments after the command names that are
// neither flags nor their values.
func positionals(app *cli.App, cmd *cli.Command, tokens []string) int {
	path, _ := commandPath(app, tokens)
	n := 0
	for i := path[len(path)-1] + 1; i < len(tokens); i++ {
		tok := tokens[i]
		if !isFlag(tok) {
			n++
			continue
		}
		f := findFlag(cmd.Flags, tok)
		if f == nil {
			f = findFlag(app.Flags, tok)
		}
		if f != nil && takesValue(f, tok) {
			i++
		}
	}
	return n
}

// completionDir is the CA directory of a command line being completed:
// --dir, $MINICA_DIR or ~/.minica.
func completionDir(tokens []string) string {
	for i, tok := range tokens {
		switch {
		case (tok == "--dir" || tok == "-dir") && i+1 < len(tokens):
			return tokens[i+1]
		case strings.HasPrefix(tok, "--dir="):
			return strings.TrimPrefix(tok, "--dir=")
		}
	}
	if d := os.Getenv("MINICA_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".minica")
}

func completionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: "Completes commands, flags, the names of issued certificates (revoke, show,\n" +
			"verify, export p12) and the values of --reason, --status, --profile,\n" +
			"--key-type and --headers.\n\n" +
			"Example:\n   source <(minica completion bash)\n" +
			"   minica completion zsh > \"${fpath[1]}/_minica\"",
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 1, 1); err != nil {
				return err
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usagef(c, "unknown shell %q: want bash or zsh", c.Args().First())
			}
			_, err := fmt.Fprint(e.stdout, script)
			return err
		},
	}
}

// completionScripts ask minica itself for candidates through urfave/cli's
// --generate-bash-completion flag.
var completionScripts = map[string]string{
	"bash": `_minica_complete() {
  local cur opts
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _minica_complete minica
`,
	"zsh": `#compdef minica
_minica() {
  local -a opts
  opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  _describe 'values' opts
}
compdef _minica minica
`,
}
