package main

import (
	"github.com/urfave/cli/v2"
)

func runRenewExpiring(c *cli.Context, e *env) error {
	return usagef(c, "--expiring is not implemented yet")
}
