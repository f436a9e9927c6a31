package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"minica/formats"
)

// errNoPasswordSource is returned when a password is needed and there is no
// file, no environment variable and no terminal to ask.
var errNoPasswordSource = errors.New("a password is needed, but there is no --password-file, no MINICA_PASSWORD and no terminal to ask")

// maxPasswordTries is how many times a password prompt asks when the
// password typed is wrong.
const maxPasswordTries = 3

// errInterrupted ends minica with the status of a shell's Ctrl-C when the
// user interrupts a password prompt.
var errInterrupted = &exitError{code: 130, err: errors.New("interrupted")}

// retryTyped calls attempt, which reads a password at the prompt and uses
// it, again while it fails with formats.ErrWrongPassword, saying so each
// time, up to maxPasswordTries calls; the last wrong one comes back as a
// typedWrong.
func (e *env) retryTyped(attempt func() error) error {
	for try := 1; ; try++ {
		err := attempt()
		if !errors.Is(err, formats.ErrWrongPassword) {
			return err
		}
		if try == maxPasswordTries {
			return typedWrong{err}
		}
		fmt.Fprintln(e.stderr, "minica: wrong password, try again")
	}
}

// inputRetry is retryTyped when the password of an input is typed (there
// is neither the file flag nor envVar), else one call of attempt.
func (e *env) inputRetry(c *cli.Context, fileFlag, envVar string, attempt func() error) error {
	if !e.typesPassword(c, fileFlag, envVar) {
		return attempt()
	}
	return e.retryTyped(attempt)
}

// typedWrong is the last wrong password typed at a prompt: no hint about
// password files, which are for the case without a terminal.
type typedWrong struct{ error }

func (t typedWrong) Error() string {
	return fmt.Sprintf("%v (%d tries)", t.error, maxPasswordTries)
}
func (t typedWrong) Unwrap() error { return t.error }

// password reads a secret from --password-file, then the environment
// variable envVar, then a no-echo prompt on the terminal (asked twice when
// confirm is set). It never hangs: without any source it fails at once.
func (e *env) password(c *cli.Context, envVar, prompt string, confirm bool) ([]byte, error) {
	if file := c.String("password-file"); file != "" {
		return readPasswordFile(file)
	}
	if v := os.Getenv(envVar); v != "" {
		return []byte(v), nil
	}
	if !e.terminal() {
		return nil, withHint(errNoPasswordSource, "pass --password-file FILE or set %s", envVar)
	}
	pw, err := e.askSecret(prompt, confirm)
	if err == nil && len(pw) == 0 {
		err = errors.New("empty password")
	}
	return pw, err
}

// askSecret prompts on the terminal without echo; with confirm it asks
// twice and refuses two different answers.
func (e *env) askSecret(prompt string, confirm bool) ([]byte, error) {
	pw, err := e.readSecret(prompt + ": ")
	if err != nil {
		return nil, fmt.Errorf("reading password: %w", err)
	}
	if confirm {
		again, err := e.readSecret("Repeat " + prompt + ": ")
		if err != nil {
			return nil, fmt.Errorf("reading password: %w", err)
		}
		if !bytes.Equal(pw, again) {
			return nil, errors.New("the passwords do not match")
		}
	}
	return pw, nil
}

// maxPasswordFile is the longest password a password file may hold, in
// bytes, besides its trailing newline. Far above any real password, it
// stops a wrong file (a key, a log, /dev/zero) from being read to the end.
const maxPasswordFile = 4096

// readPasswordFile reads a password file, dropping one trailing LF or CRLF.
// It reads at most maxPasswordFile bytes plus the newline and refuses more.
func readPasswordFile(file string) ([]byte, error) { return readSecretFile(file, "password") }

// readSecretFile is readPasswordFile for a secret named what ("password",
// "PIN") in its messages.
func readSecretFile(file, what string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s file: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordFile+3))
	if err != nil {
		return nil, fmt.Errorf("reading %s file: %w", what, err)
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		data = bytes.TrimSuffix(data, []byte("\n"))
	} else {
		data = data[:len(data)-2]
	}
	if len(data) > maxPasswordFile {
		return nil, fmt.Errorf("reading %s file %q: it is longer than %d bytes: a %s file holds one %s", what, file, maxPasswordFile, what, what)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s file %q is empty", what, file)
	}
	return data, nil
}
