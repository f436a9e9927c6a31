package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func crlImportRootCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "import-root",
		Usage:     "on an intermediate CA: replace the root's CRL that it keeps with a newer one",
		ArgsUsage: "FILE",
		Description: "FILE is the root's CRL (PEM or DER), as 'minica --dir ROOTDIR crl --out FILE'\n" +
			"writes it on the root's machine. It must be signed by the root in root.crt,\n" +
			"numbered no lower than the CRL held, not signed in the future, and not\n" +
			"expired while the CRL held is current (the proxy's rule for a new CRL); it\n" +
			"goes to root-crl.pem and root-crl.der, which verify, the generated server\n" +
			"configurations and serve read. The same CRL again changes nothing. A CRL\n" +
			"that lists this intermediate is imported too: from then on every leaf of\n" +
			"it fails verification.\n\n" +
			"Example:\n   minica crl import-root /media/usb/root.crl",
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error { return runCRLImportRoot(c, e) },
	}
}

func runCRLImportRoot(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	file := c.Args().First()
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading the root CRL: %w", err)
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if !authority.IsIntermediate() {
		return withHint(fmt.Errorf("%q is not an intermediate CA: only an intermediate keeps its root's CRL", authority.Dir().Path()),
			"point --dir at the intermediate CA on the issuing host")
	}
	crl, err := authority.ImportRootCRL(data)
	if errors.Is(err, ca.ErrOlderCRL) {
		return withHint(err, "bring the root's newest CRL: minica --dir ROOTDIR crl --out FILE")
	}
	if err != nil {
		return err
	}
	revoked := crl.IsRevoked(authority.Cert.SerialNumber)
	if c.Bool("json") {
		return writeJSON(e.stdout, map[string]any{
			"number": crl.Number().String(), "entries": crl.Len(), "this_update": crl.ThisUpdate(), "next_update": crl.NextUpdate(),
			"file": authority.Path(ca.RootCRLDERFile), "this_ca_revoked": revoked,
		})
	}
	fmt.Fprintf(e.stdout, "imported root CRL %s (%d revoked), next update %s\n", crl.Number(), crl.Len(), day(crl.NextUpdate()))
	fmt.Fprintf(e.stdout, "  pem  %s\n  der  %s\n", authority.Path(ca.RootCRLPEMFile), authority.Path(ca.RootCRLDERFile))
	if revoked {
		warnf(e.stderr, "the root CRL revokes this intermediate CA (serial %s): every certificate it issued now fails verification", ca.SerialHex(authority.Cert.SerialNumber))
	}
	return nil
}
