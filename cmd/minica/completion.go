package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func completionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: "Example:\n   source <(minica completion bash)\n" +
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
