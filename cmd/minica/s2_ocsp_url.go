package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func ocspCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "ocsp",
		Usage:       "OCSP settings (minica serve answers OCSP requests)",
		Subcommands: []*cli.Command{ocspURLCommand(e)},
		Action:      missingSubcommand,
	}
}

func ocspURLCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "url",
		Usage:     "show or set the OCSP responder URL put into new certificates",
		ArgsUsage: "[URL]",
		Description: "Every leaf issued after this carries URL as its OCSP responder, in its\n" +
			"authority information access; certificates already issued keep what they\n" +
			"have. minica serve answers OCSP at /ocsp and at the path of this URL. Also\n" +
			"settable at creation: minica init --ocsp-url URL.\n\n" +
			"Example:\n   minica ocsp url http://pki.example.com/ocsp\n   minica ocsp url --clear",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "clear", Usage: "stop putting an OCSP responder URL into new certificates"},
		},
		Action: func(c *cli.Context) error { return runOCSPURL(c, e) },
	}
}

func runOCSPURL(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 1); err != nil {
		return err
	}
	if c.NArg() == 0 && !c.Bool("clear") {
		authority, err := openCA(c, e)
		if err != nil {
			return err
		}
		defer authority.Close()
		if u := authority.Settings.OCSPURL; u != "" {
			fmt.Fprintln(e.stdout, u)
		}
		return nil
	}
	if c.NArg() == 1 && c.Bool("clear") {
		return usagef(c, "pass a URL or --clear, not both")
	}
	u := c.Args().First()
	if u != "" {
		if err := ca.ValidateOCSPURL(u); err != nil {
			return usagef(c, "%v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := authority.SetOCSPURL(u); err != nil {
		return err
	}
	if u == "" {
		fmt.Fprintln(e.stdout, "new certificates will carry no OCSP responder URL")
	} else {
		fmt.Fprintf(e.stdout, "new certificates will carry the OCSP responder URL %s\n", u)
	}
	return nil
}
