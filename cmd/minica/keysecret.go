package main

import (
	"crypto"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

// keySecrets finds the secret that opens a CA key, whichever the key's
// source (ca.KeySource): a password from its file flag, its environment
// variable or a no-echo prompt; a PIN from --pin-file, MINICA_PIN or a
// no-echo prompt. It never hangs: without a source and without a terminal
// it fails at once. ca decides which secret a key needs; this is the one
// place that knows where a person keeps it.
type keySecrets struct {
	c *cli.Context
	e *env
	// passwordFlag, passwordEnv and prompt are the sources of a password:
	// "password-file", "MINICA_PASSWORD" and "CA key password" for the CA
	// of --dir.
	passwordFlag, passwordEnv, prompt string
}

// caKeySecrets is keySecrets for the CA of --dir.
func caKeySecrets(c *cli.Context, e *env) *keySecrets {
	return &keySecrets{c: c, e: e, passwordFlag: "password-file", passwordEnv: "MINICA_PASSWORD", prompt: "CA key password"}
}

// find is the ca.SecretFunc: the password or the PIN that src needs.
func (s *keySecrets) find(src ca.KeySource) ([]byte, error) {
	if src.Kind == ca.KeyInToken {
		return s.pin(src.URI)
	}
	return s.password()
}

func (s *keySecrets) password() ([]byte, error) {
	if file := s.c.String(s.passwordFlag); file != "" {
		return readPasswordFile(file)
	}
	if v := os.Getenv(s.passwordEnv); v != "" {
		return []byte(v), nil
	}
	if !s.e.terminal() {
		return nil, withHint(errNoPasswordSource, "pass --%s FILE or set %s", s.passwordFlag, s.passwordEnv)
	}
	pw, err := s.e.readSecret(s.prompt + ": ")
	if err != nil {
		return nil, fmt.Errorf("reading password: %w", err)
	}
	return pw, nil
}

// pin reads the PIN of the token of u. A wrong PIN is not asked again:
// tokens lock the PIN after a few wrong ones.
func (s *keySecrets) pin(u *ca.KeyURI) ([]byte, error) {
	if file := s.c.String("pin-file"); file != "" {
		return readSecretFile(file, "PIN")
	}
	if v := os.Getenv(pinEnv); v != "" {
		return []byte(v), nil
	}
	if !s.e.terminal() {
		return nil, withHint(errNoPINSource, "pass --pin-file FILE or set %s", pinEnv)
	}
	pin, err := s.e.readSecret(fmt.Sprintf("PIN of %s: ", u.TokenName()))
	if err != nil {
		return nil, fmt.Errorf("reading PIN: %w", err)
	}
	return pin, nil
}

// open calls open with find; a password typed at the prompt that is wrong
// is asked again, up to maxPasswordTries times. A wrong password that was
// not typed gets the hint of where it came from.
func (s *keySecrets) open(open func(secret ca.SecretFunc) error) error {
	err := s.e.inputRetry(s.c, s.passwordFlag, s.passwordEnv, func() error { return open(s.find) })
	var typed typedWrong
	if errors.Is(err, formats.ErrWrongPassword) && !errors.As(err, &typed) {
		return withHint(err, "check --%s or %s", s.passwordFlag, s.passwordEnv)
	}
	return err
}

// signer opens the key of authority (ca.CA.OpenSigner).
func (s *keySecrets) signer(authority *ca.CA) (signer crypto.Signer, err error) {
	err = s.open(func(secret ca.SecretFunc) (err error) {
		signer, err = authority.OpenSigner(secret)
		return err
	})
	return signer, err
}

// loadSigner opens the key of the CA of --dir, with its secret from the
// flags, the environment or a prompt, refusing a secret flag of the other
// kind of key.
func loadSigner(c *cli.Context, e *env, authority *ca.CA) (crypto.Signer, error) {
	src, err := authority.KeySource()
	if err != nil {
		return nil, err
	}
	switch {
	case src.Kind == ca.KeyInToken && c.String("password-file") != "":
		return nil, usagef(c, "--password-file: the CA key is in %s, which takes a PIN: pass --pin-file FILE or set %s", src.URI.TokenName(), pinEnv)
	case src.Kind != ca.KeyInToken && c.String("pin-file") != "":
		return nil, usagef(c, "--pin-file: the CA key is a file (ca.key), not in a PKCS#11 token")
	}
	return caKeySecrets(c, e).signer(authority)
}
