package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// env is everything a command touches outside its arguments, so that tests
// can replace it. Only main builds the real one.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
	// terminal reports whether a no-echo password prompt is possible.
	terminal func() bool
	// readSecret prompts on the terminal and reads a line without echo.
	readSecret func(prompt string) ([]byte, error)
}

func newEnv() *env {
	return &env{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		now:    time.Now,
		terminal: func() bool {
			return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd()))
		},
		readSecret: func(prompt string) ([]byte, error) {
			fmt.Fprint(os.Stderr, prompt)
			defer fmt.Fprintln(os.Stderr)
			return term.ReadPassword(int(os.Stdin.Fd()))
		},
	}
}
