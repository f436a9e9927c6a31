package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultExecTimeout bounds the command run after a renewal.
const DefaultExecTimeout = time.Minute

// SplitCommand splits a command line into its words the way a POSIX shell
// quotes, and nothing more: words are separated by blanks; '...' keeps
// everything literally, "..." keeps everything but \" and \\, and a
// backslash outside quotes escapes the next character. Anything a shell
// would expand or interpret ($VAR, `...`, *, ;, |, &, <, >, ( ), ~, #) is
// refused, so that nobody mistakes the command for a shell script: run
// `sh -c '...'` explicitly when one is wanted.
func SplitCommand(line string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				} else if line[i] == '$' || line[i] == '`' {
					return nil, fmt.Errorf("%q inside double quotes is shell syntax, which the command does not go through: use single quotes", line[i])
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New(`unterminated " quote`)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("a trailing backslash escapes nothing")
			}
			i++
			cur.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("$`*?[;|&<>()~#{}", c) >= 0:
			return nil, fmt.Errorf("%q is shell syntax, and the command is not run by a shell: quote it, or run sh -c '...' explicitly", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("the command is empty")
	}
	return words, nil
}

// runExec runs argv with the extra environment env, its output to out,
// for at most timeout; a command still running then is killed.
func runExec(ctx context.Context, argv, env []string, out io.Writer, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("running %q: still running after %s, killed", argv[0], timeout)
	}
	if err != nil {
		return fmt.Errorf("running %q: %w", argv[0], err)
	}
	return nil
}
