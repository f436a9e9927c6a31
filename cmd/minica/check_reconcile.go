package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// checkCRLFlag is check's --crl: CRLs of the CA held outside the store,
// whose revocations a restored store must not lose.
func checkCRLFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "crl", Usage: "also re-apply the revocations listed by the CRL in `FILE` (DER or PEM; a copy a proxy or replica holds) that the store lacks, as after restoring a backup (repeatable)"}
}

// reconcileSources reads the CRLs of --crl.
func reconcileSources(c *cli.Context, authority *ca.CA) ([]ca.ReconcileSource, error) {
	var out []ca.ReconcileSource
	for _, file := range c.StringSlice("crl") {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading --crl: %w", err)
		}
		src, err := authority.ParseReconcileSource(file, data)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}
