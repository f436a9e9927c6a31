package main

import (
	"github.com/urfave/cli/v2"

	"minica/ca"
)

func ocspCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "ocsp",
		Usage:       "OCSP settings (minica serve answers OCSP requests)",
		Subcommands: []*cli.Command{ocspURLCommand(e)},
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
	return runURLSetting(c, e, urlSetting{
		what:     "OCSP responder URL",
		get:      func(s *ca.Settings) string { return s.OCSPURL },
		validate: ca.ValidateOCSPURL,
		set:      (*ca.CA).SetOCSPURL,
	})
}
