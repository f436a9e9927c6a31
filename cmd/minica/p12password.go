package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"minica/formats"
)

// p12PasswordEnv is the environment variable holding a PKCS#12 password.
const p12PasswordEnv = "MINICA_P12_PASSWORD"

// keyPasswordEnv holds the password of an encrypted key file given to
// convert, inspect or export --key.
const keyPasswordEnv = "MINICA_KEY_PASSWORD"

// newP12Password returns the password of a bundle about to be written,
// from the file flag, $MINICA_P12_PASSWORD, a no-echo prompt (--ask-password)
// or, failing those, generated; generated reports the last case. The
// password must pass formats.CheckP12Password.
func (e *env) newP12Password(c *cli.Context, fileFlag, askFlag string) (pw string, generated bool, err error) {
	var raw []byte
	switch {
	case c.String(fileFlag) != "":
		raw, err = readPasswordFile(c.String(fileFlag))
	case os.Getenv(p12PasswordEnv) != "":
		raw = []byte(os.Getenv(p12PasswordEnv))
	case askFlag != "" && c.Bool(askFlag):
		raw, err = e.askNewPassword("PKCS#12 password")
	default:
		pw, err = formats.GeneratePassword()
		return pw, err == nil, err
	}
	if err != nil {
		return "", false, err
	}
	if err := formats.CheckP12Password(string(raw)); err != nil {
		return "", false, err
	}
	return string(raw), false, nil
}

// askNewPassword prompts twice for a new password; without a terminal it
// fails at once.
func (e *env) askNewPassword(prompt string) ([]byte, error) {
	if !e.terminal() {
		return nil, errors.New("--ask-password needs a terminal")
	}
	return e.askSecret(prompt, true)
}

// inputPassword returns the password of an encrypted input (a key or a
// .p12): the file flag, then envVar, then a prompt on a terminal. Without
// any source it returns nil, and the caller reports what needs a password.
func (e *env) inputPassword(c *cli.Context, fileFlag, envVar, prompt string) ([]byte, error) {
	if file := c.String(fileFlag); file != "" {
		return readPasswordFile(file)
	}
	if v := os.Getenv(envVar); v != "" {
		return []byte(v), nil
	}
	if !e.terminal() {
		return nil, nil
	}
	pw, err := e.readSecret(prompt + ": ")
	if err != nil {
		return nil, fmt.Errorf("reading password: %w", err)
	}
	return pw, nil
}

// typesPassword reports whether inputPassword asks on the terminal: there
// is neither the file flag nor envVar.
func (e *env) typesPassword(c *cli.Context, fileFlag, envVar string) bool {
	return c.String(fileFlag) == "" && os.Getenv(envVar) == "" && e.terminal()
}

// passwordHint is the error of path, an encrypted input, that did not
// open: err, the cause, with how to give a missing password. A wrong one
// from the file flag or envVar names its source and path, the real mistake
// (telling to pass the flag given would mislead); one typed at the prompt
// (a typedWrong) needs no hint.
func passwordHint(c *cli.Context, path string, err error, fileFlag, envVar string) error {
	var typed typedWrong
	switch {
	case errors.As(err, &typed):
	case errors.Is(err, formats.ErrWrongPassword) && c.String(fileFlag) != "":
		file := c.String(fileFlag)
		return withHint(&wrongPasswordError{source: fmt.Sprintf("%q (--%s)", file, fileFlag), path: path, err: err},
			"%q must hold the password of %s, alone on its line (spaces count; one trailing newline is dropped)", file, path)
	case errors.Is(err, formats.ErrWrongPassword) && os.Getenv(envVar) != "":
		return withHint(&wrongPasswordError{source: envVar, path: path, err: err},
			"set %s to the password of %s, or pass --%s FILE", envVar, path, fileFlag)
	case errors.Is(err, formats.ErrPasswordRequired) || errors.Is(err, formats.ErrWrongPassword):
		return withHint(fmt.Errorf("%s: %w", path, err), "pass --%s FILE or set %s", fileFlag, envVar)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// wrongPasswordError is a password, from source (a file and its flag, or
// an environment variable), that does not open path; it wraps the error
// of the decoder, formats.ErrWrongPassword.
type wrongPasswordError struct {
	source, path string
	err          error
}

func (e *wrongPasswordError) Error() string {
	return fmt.Sprintf("the password in %s does not open %s", e.source, e.path)
}
func (e *wrongPasswordError) Unwrap() error { return e.err }
