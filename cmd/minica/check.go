package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func checkCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify the CA directory and repair what a crash left",
		ArgsUsage: " ",
		Description: "Removes temporary files, completes or voids interrupted issuances, and\n" +
			"recreates missing records. It never deletes a record or a certificate.\n" +
			"Exit status 1 when a problem remains that it cannot repair.\n\n" +
			"Example:\n   minica check",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: jsonFlagUsage()}},
		Action: func(c *cli.Context) error { return runCheck(c, e) },
	}
}

func runCheck(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	rep, err := authority.Check()
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(e.stdout, map[string]any{
			"records": rep.Records, "repaired": nonNil(rep.Repaired), "problems": nonNil(rep.Problems), "ok": len(rep.Problems) == 0,
		}); err != nil {
			return err
		}
	} else {
		for _, r := range rep.Repaired {
			fmt.Fprintf(e.stdout, "repaired: %s\n", r)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(e.stdout, "problem: %s\n", p)
		}
		fmt.Fprintf(e.stdout, "%d records, %d repaired, %d problems\n", rep.Records, len(rep.Repaired), len(rep.Problems))
	}
	if len(rep.Problems) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("the CA directory has %d problem(s) minica check cannot repair", len(rep.Problems))}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
