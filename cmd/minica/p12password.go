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

// passwordHint tells the user how to give a missing or wrong password,
// unless the wrong one was typed at the prompt (a typedWrong).
func passwordHint(err error, fileFlag, envVar string) error {
	var typed typedWrong
	if errors.As(err, &typed) {
		return err
	}
	if errors.Is(err, formats.ErrPasswordRequired) || errors.Is(err, formats.ErrWrongPassword) {
		return withHint(err, "pass --%s FILE or set %s", fileFlag, envVar)
	}
	return err
}
