package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func crlURLCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "url",
		Usage:     "show or set the CRL distribution point put into new certificates",
		ArgsUsage: "[URL]",
		Description: "Every leaf issued after this carries URL as its CRL distribution point;\n" +
			"certificates already issued keep what they have. Serve the DER CRL there\n" +
			"(minica crl --out). Also settable at creation: minica init --crl-url URL.\n\n" +
			"Example:\n   minica crl url http://pki.example.com/ca.crl\n   minica crl url --clear",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "clear", Usage: "stop putting a CRL distribution point into new certificates"},
		},
		Action: func(c *cli.Context) error { return runCRLURL(c, e) },
	}
}

func runCRLURL(c *cli.Context, e *env) error {
	return runURLSetting(c, e, urlSetting{
		what:     "CRL distribution point",
		get:      func(s *ca.Settings) string { return s.CRLURL },
		validate: ca.ValidateCRLURL,
		set:      (*ca.CA).SetCRLURL,
	})
}

// urlSetting is one URL of the CA settings that new certificates carry.
type urlSetting struct {
	what     string // for messages: "CRL distribution point"
	get      func(*ca.Settings) string
	validate func(string) error
	set      func(*ca.CA, string) error
}

// runURLSetting shows the URL (no argument), sets it (URL) or clears it
// (--clear), under the CA lock.
func runURLSetting(c *cli.Context, e *env, u urlSetting) error {
	if err := wantArgs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 0 && !c.Bool("clear") {
		authority, err := openCA(c, e)
		if err != nil {
			return err
		}
		defer authority.Close()
		if v := u.get(&authority.Settings); v != "" {
			fmt.Fprintln(e.stdout, v)
		}
		return nil
	}
	if c.NArg() == 1 && c.Bool("clear") {
		return usagef(c, "pass a URL or --clear, not both")
	}
	v := c.Args().First()
	if v != "" {
		if err := u.validate(v); err != nil {
			return usagef(c, "%v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := u.set(authority, v); err != nil {
		return err
	}
	if v == "" {
		fmt.Fprintf(e.stdout, "new certificates will carry no %s\n", u.what)
	} else {
		fmt.Fprintf(e.stdout, "new certificates will carry the %s %s\n", u.what, v)
	}
	return nil
}
