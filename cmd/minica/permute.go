package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// permute reorders a command line so that urfave/cli, which stops reading
// flags at the first positional argument, sees every flag: flags of the app
// move before the command, flags of the command before its positional
// arguments. "--" still ends the flags; a trailing
// --generate-bash-completion stays last, where urfave/cli looks for it.
func permute(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	tokens := args[1:]
	var tail []string
	if last := tokens[len(tokens)-1]; last == "--generate-bash-completion" {
		tokens, tail = tokens[:len(tokens)-1], []string{last}
	}
	path, leaf := commandPath(app, tokens)
	names := make([]string, len(path))
	for i, p := range path {
		names[i] = tokens[p]
	}
	var global, local, positional []string
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		if tok == "--" {
			positional = append(positional, tokens[i+1:]...)
			break
		}
		if len(path) > 0 && i == path[0] {
			path = path[1:]
			continue
		}
		if !isFlag(tok) {
			positional = append(positional, tok)
			continue
		}
		group, takes := &local, false
		if f := findFlag(leaf, tok); f != nil {
			takes = takesValue(f, tok)
		} else if f := findFlag(app.Flags, tok); f != nil {
			group, takes = &global, takesValue(f, tok)
		}
		*group = append(*group, tok)
		if takes && i+1 < len(tokens) {
			i++
			*group = append(*group, tokens[i])
		}
	}
	if slices.ContainsFunc(local, isHelpFlag) {
		positional = nil // "issue client simon --help" asks for help, not about "simon"
	}
	out := append([]string{args[0]}, global...)
	out = append(out, names...)
	out = append(out, local...)
	for _, p := range positional {
		if isFlag(p) {
			out = append(out, "--")
			break
		}
	}
	out = append(out, positional...)
	return append(out, tail...)
}

// commandPath finds the indexes of the command names in tokens (e.g. "issue"
// and "client") and the flags of the innermost command.
func commandPath(app *cli.App, tokens []string) ([]int, []cli.Flag) {
	var path []int
	cmds, flags := app.Commands, []cli.Flag(nil)
	all := append([]cli.Flag(nil), app.Flags...)
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		if tok == "--" {
			break
		}
		if isFlag(tok) {
			if f := findFlag(all, tok); f != nil && takesValue(f, tok) {
				i++
			}
			continue
		}
		cmd := findCommand(cmds, tok)
		if cmd == nil {
			break
		}
		path = append(path, i)
		cmds, flags = cmd.Subcommands, cmd.Flags
		all = append(all, descendantFlags(cmd)...)
	}
	return path, flags
}

func descendantFlags(cmd *cli.Command) []cli.Flag {
	flags := append([]cli.Flag(nil), cmd.Flags...)
	for _, sub := range cmd.Subcommands {
		flags = append(flags, descendantFlags(sub)...)
	}
	return flags
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func isHelpFlag(tok string) bool { return tok == "-h" || tok == "--help" }

func isFlag(tok string) bool { return len(tok) > 1 && tok[0] == '-' }

func flagName(tok string) string {
	name := strings.TrimLeft(tok, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	return name
}

func findFlag(flags []cli.Flag, tok string) cli.Flag {
	name := flagName(tok)
	if name == "h" || name == "help" {
		return cli.HelpFlag
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// takesValue reports whether the flag token consumes the next token.
func takesValue(f cli.Flag, tok string) bool {
	if strings.Contains(tok, "=") {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}
