package main

import (
	"crypto"
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func checkCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify the CA directory and repair what a crash left",
		ArgsUsage: " ",
		Description: "Removes temporary files, completes or voids interrupted issuances, and\n" +
			"recreates missing records. It makes crl.pem and crl.der hold the same CRL, and\n" +
			"when the CRL lacks revocations (a revoke could not publish) it publishes one,\n" +
			"asking for the CA key password only then. It never deletes a record or a\n" +
			"certificate. Revocations that the CRLs published by the CA list and the store\n" +
			"lacks (a store restored from a backup) are re-applied: the CA directory's\n" +
			"published copy on PostgreSQL, and each --crl FILE (see docs/scaling.md).\n" +
			"Exit status 1 when a problem remains that it cannot repair.\n\n" +
			"Example:\n   minica check\n   minica check --password-file /run/secrets/ca",
		Flags:  []cli.Flag{passwordFileFlag(), pinFileFlag(), jsonFlag(), checkCRLFlag()},
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
	sources, err := reconcileSources(c, authority)
	if err != nil {
		return err
	}
	rep, err := authority.CheckWith(ca.CheckOptions{Signer: func() (crypto.Signer, error) { return loadSigner(c, e, authority) }, Reconcile: sources})
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
		err := fmt.Errorf("the CA directory has %d problem(s) minica check cannot repair", len(rep.Problems))
		if rep.NoCRL {
			err = withHint(err, "publish a CRL with 'minica crl'")
		}
		return &exitError{code: 1, err: err}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
