package main

import (
	"github.com/urfave/cli/v2"

	"minica/proxy"
)

// proxyRefusalFlags are the flags of how a refused client learns why.
func proxyRefusalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "refusal", Value: proxy.RefusalAlert, Usage: "tell a refused client why by `MODE`: alert (the TLS handshake fails with an alert) or page (the handshake passes and every request gets a page or text saying why, the upstream none; see docs/proxy.md)"},
		&cli.StringFlag{Name: "help-url", Usage: "with --refusal page, link each refusal page to `URL`, where people renew or enroll"},
	}
}

// parseRefusalFlags sets the refusal mode and help URL of cfg.
func parseRefusalFlags(c *cli.Context, cfg *proxy.Config) error {
	mode, err := proxy.ParseRefusalMode(c.String("refusal"))
	if err != nil {
		return usagef(c, "--refusal: %v", err)
	}
	if err := proxy.CheckHelpURL(mode, c.String("help-url")); err != nil {
		return usagef(c, "--help-url: %v", err)
	}
	cfg.Refusal, cfg.HelpURL = mode, c.String("help-url")
	return nil
}
