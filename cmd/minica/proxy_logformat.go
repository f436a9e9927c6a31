package main

import (
	"github.com/urfave/cli/v2"

	"minica/proxy"
)

// accessLogFormatFlag is --access-log-format: the format of the access
// and event log lines.
func accessLogFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "access-log-format", Value: proxy.LogText,
		Usage: "write the access and event log as `FORMAT`: text, or json (one JSON object per line)"}
}

// parseAccessLogFormat sets cfg.LogFormat from --access-log-format.
func parseAccessLogFormat(c *cli.Context, cfg *proxy.Config) error {
	f, err := proxy.ParseLogFormat(c.String("access-log-format"))
	if err != nil {
		return usagef(c, "--access-log-format: %v", err)
	}
	cfg.LogFormat = f
	return nil
}
