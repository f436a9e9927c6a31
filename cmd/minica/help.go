package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// helpCommand is "minica help [COMMAND [SUBCOMMAND]]": the --help of that
// command. Only the top level has it; after a command, "help" is data (a
// certificate may be named help).
func helpCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "help",
		Usage:       "show the help of a command (the same as COMMAND --help)",
		ArgsUsage:   "[COMMAND [SUBCOMMAND]]",
		Description: "Example:\n   minica help issue client",
		Action: func(c *cli.Context) error {
			path := c.Args().Slice()
			cmds := newApp(e).Commands
			for i, name := range path {
				cmd := findCommand(cmds, name)
				if cmd == nil && i == 0 {
					return unknownCommand(c, "unknown command %q", path[:i], name, cmds)
				}
				if cmd == nil && len(cmds) > 0 {
					return unknownCommand(c, "unknown subcommand %q", path[:i], name, cmds)
				}
				if cmd == nil {
					return usagef(c, "minica %s has no subcommand %q", strings.Join(path[:i], " "), name)
				}
				cmds = cmd.Subcommands
			}
			// A fresh app: urfave/cli keeps parse state on the flags.
			args := append(append([]string{"minica"}, path...), "--help")
			return newApp(e).RunContext(c.Context, args)
		},
	}
}

// unknownCommand is the usage error for a command name that is not one of
// cmds (under parents), with the nearest name as a hint when one is near.
func unknownCommand(c *cli.Context, format string, parents []string, name string, cmds []*cli.Command) error {
	err := usagef(c, format, name)
	if near := nearestCommand(name, cmds); near != "" {
		return withHint(err, "did you mean '%s'?", strings.Join(append(append([]string{"minica"}, parents...), near), " "))
	}
	if len(parents) == 0 {
		return withHint(err, "run 'minica --help' for the commands")
	}
	return err
}

// nearestCommand returns the visible command name of cmds nearest to name
// by edit distance, if it is at most 2 edits away (1 for short names), or
// "" when none is.
func nearestCommand(name string, cmds []*cli.Command) string {
	best, bestDist := "", 3
	if len(name) <= 3 {
		bestDist = 2
	}
	for _, cmd := range cmds {
		if cmd.Hidden || cmd.Name == "help" {
			continue
		}
		if d := editDistance(strings.ToLower(name), cmd.Name); d < bestDist {
			best, bestDist = cmd.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counting an
// exchange of two neighbours (isue, issue; stauts, status) as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
