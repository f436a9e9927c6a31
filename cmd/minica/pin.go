package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// pinFileFlag is --pin-file of the commands that use the CA key, for a key
// in a PKCS#11 token; the PIN is never a flag value.
func pinFileFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "pin-file",
		Usage: "read the PIN of the PKCS#11 token that holds the CA key from `FILE` (one trailing newline is ignored)",
	}
}

// pinEnv is the environment variable that may hold the token PIN.
const pinEnv = "MINICA_PIN"

// errNoPINSource is returned when a token PIN is needed and there is no
// file, no environment variable and no terminal to ask.
var errNoPINSource = errors.New("the CA key is in a PKCS#11 token and its PIN is needed, but there is no --pin-file, no " + pinEnv + " and no terminal to ask")

// tokenHint adds what to do to an error of a CA key in a token.
func tokenHint(err error) error {
	switch {
	case errors.Is(err, ca.ErrWrongPIN):
		return withHint(err, "check --pin-file or %s; a token locks its PIN after a few wrong ones", pinEnv)
	case errors.Is(err, ca.ErrPINLocked):
		return withHint(err, "for SoftHSM2: softhsm2-util --init-pin needs the SO PIN; other tokens have their own tool")
	case errors.Is(err, ca.ErrTokenNotFound):
		return withHint(err, "is the token plugged in, and is its label right? softhsm2-util --show-slots or pkcs11-tool --list-token-slots lists them")
	case errors.Is(err, ca.ErrModuleNotFound):
		return withHint(err, "install the token's PKCS#11 library (SoftHSM2: apt-get install softhsm2), or correct module-path in the key URI")
	case errors.Is(err, ca.ErrModuleInit):
		return withHint(err, "check the module's own configuration (SoftHSM2: SOFTHSM2_CONF and the tokendir it names)")
	case errors.Is(err, ca.ErrKeyNotFound):
		return withHint(err, "a CA certificate's key cannot be replaced; restore the token from its backup, or make a new CA")
	case errors.Is(err, ca.ErrKeyExists):
		return withHint(err, "to make a CA of that key pass --existing-key; else choose another object= name")
	case errors.Is(err, ca.ErrPKCS11Unsupported):
		return withHint(err, "see 'CA keys in an HSM' in docs/hierarchy.md")
	}
	return err
}

// tokenInitOptions sets the PKCS#11 options of init: --key-uri, checked
// (never a PIN in it), --existing-key and the PIN.
func tokenInitOptions(c *cli.Context, e *env, opts *ca.InitOptions) error {
	if !c.IsSet("key-uri") {
		return usagef(c, "--existing-key and --pin-file need --key-uri, the PKCS#11 URI of the CA key")
	}
	for _, f := range []string{"no-password", "password-file"} {
		if c.IsSet(f) {
			return usagef(c, "--%s and --key-uri contradict each other: a key in a token is protected by the token's PIN", f)
		}
	}
	if c.Bool("existing-key") && c.IsSet("key-type") {
		return usagef(c, "--key-type and --existing-key contradict each other: the key type is the existing key's")
	}
	u, err := ca.ParseKeyURI(c.String("key-uri"))
	if err != nil {
		return usagef(c, "--key-uri: %v", err)
	}
	// Before asking for a PIN that could not be used.
	src := ca.KeySource{Kind: ca.KeyInToken, URI: u}
	if err := src.Supported(); err != nil {
		return tokenHint(err)
	}
	pin, err := caKeySecrets(c, e).find(src)
	if err != nil {
		return err
	}
	opts.KeyURI, opts.ExistingKey, opts.PIN = u, c.Bool("existing-key"), pin
	return nil
}
