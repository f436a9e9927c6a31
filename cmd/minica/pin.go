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
		return usagef(c, "--key-uri: %w", err)
	}
	// Before asking for a PIN that could not be used.
	src := ca.KeySource{Kind: ca.KeyInToken, URI: u}
	if err := src.Supported(); err != nil {
		return err
	}
	pin, err := caKeySecrets(c, e).find(src)
	if err != nil {
		return err
	}
	opts.KeyURI, opts.ExistingKey, opts.PIN = u, c.Bool("existing-key"), pin
	return nil
}
