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
	if err := wantArgs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 0 && !c.Bool("clear") {
		authority, err := openCA(c, e)
		if err != nil {
			return err
		}
		defer authority.Close()
		if u := authority.Settings.CRLURL; u != "" {
			fmt.Fprintln(e.stdout, u)
		}
		return nil
	}
	if c.NArg() == 1 && c.Bool("clear") {
		return usagef(c, "pass a URL or --clear, not both")
	}
	u := c.Args().First()
	if u != "" {
		if err := ca.ValidateCRLURL(u); err != nil {
			return usagef(c, "%v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := authority.SetCRLURL(u); err != nil {
		return err
	}
	if u == "" {
		fmt.Fprintln(e.stdout, "new certificates will carry no CRL distribution point")
	} else {
		fmt.Fprintf(e.stdout, "new certificates will carry the CRL distribution point %s\n", u)
	}
	return nil
}
