package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// usageError is a mistake in the command line: exit status 2.
type usageError struct {
	err     error
	command string // the full command name, for the hint
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(c *cli.Context, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), command: c.Command.HelpName}
}

// hintError carries an extra line telling the user what to do.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, format string, args ...any) error {
	return &hintError{err: err, hint: fmt.Sprintf(format, args...)}
}

// exitError ends minica with a specific status after printing its message
// (if any); commands like `crl status` use it to report through the status.
type exitError struct {
	code int
	err  error // nil: nothing more to print
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// report prints err as "minica: error: …" plus an optional hint, and returns
// the exit status: 2 for usage errors, the chosen one for exitError, else 1.
func report(w io.Writer, err error) int {
	var xe *exitError
	if errors.As(err, &xe) && xe.err == nil {
		return xe.code
	}
	fmt.Fprintf(w, "minica: error: %s\n", oneLine(err.Error()))
	if hint := hintFor(err); hint != "" {
		fmt.Fprintf(w, "minica: hint: %s\n", hint)
	}
	var ue *usageError
	switch {
	case errors.As(err, &xe):
		return xe.code
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// hintFor is the hint of err: the one added where it was made, else the
// one of its kind (errorHint), else the help of a usage error.
func hintFor(err error) string {
	var he *hintError
	if errors.As(err, &he) {
		return he.hint
	}
	if hint := errorHint(err); hint != "" {
		return hint
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.command == "" {
			return "run 'minica --help' for the commands"
		}
		return fmt.Sprintf("run '%s --help' for usage", ue.command)
	}
	return ""
}

// oneLine keeps a message on one line so that scripts can grep it.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// warnf prints a warning line on stderr.
func warnf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "minica: warning: "+format+"\n", args...)
}

// hintf prints a hint line on stderr, for a result that is no error (a
// verdict, a status) and still has a next step.
func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "minica: hint: "+format+"\n", args...)
}
