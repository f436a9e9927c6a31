package main

import (
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

func selfsignedCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "selfsigned",
		Usage:     "make a one-off self-signed server certificate and key, no CA needed",
		ArgsUsage: "NAME",
		Description: "NAME is the certificate's CN and, without --dns or --ip, its DNS name. Same key types,\n" +
			"validation and server profile as 'minica issue server'; nothing is recorded in a CA.\n\n" +
			"Example:\n   minica selfsigned www.example.com --dns www.example.com --validity 90d",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "dns", Usage: "DNS name SAN (repeatable)"},
			ipFlag(),
			&cli.StringSliceFlag{Name: "org", Usage: "organization (O)"},
			validityFlag("", "lifetime such as 90d or 1y (default: 825d)"),
			keyTypeFlag("", leafKeyTypeUsage),
			&cli.StringFlag{Name: "out", Usage: "write the certificate to `FILE` (default: ./NAME.crt)"},
			&cli.StringFlag{Name: "key-out", Usage: "write the key to `FILE`, mode 0600 (default: ./NAME.key)"},
			forceFlag(),
		},
		Action: func(c *cli.Context) error { return runSelfsigned(c, e) },
	}
}

func runSelfsigned(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	name := c.Args().First()
	if err := ca.ValidateName(name); err != nil {
		return usagef(c, "%v", err)
	}
	req := ca.Request{
		Name:         name,
		Profile:      ca.Server,
		Organization: c.StringSlice("org"),
		DNSNames:     c.StringSlice("dns"),
	}
	var err error
	if req.IPs, err = ipValues(c); err != nil {
		return err
	}
	if req.Validity, err = validityValue(c); err != nil {
		return err
	}
	if req.KeyType, err = keyTypeValue(c); err != nil {
		return err
	}
	certOut, keyOut := outName(c, "out", name+".crt"), outName(c, "key-out", name+".key")
	if certOut == keyOut {
		return usagef(c, "--out and --key-out name the same file %q", certOut)
	}
	cert, key, err := ca.SelfSigned(req, e.now())
	if err != nil {
		return err
	}
	keyPEM, err := formats.MarshalPrivateKeyPEM(key, nil)
	if err != nil {
		return err
	}
	certPEM, err := formats.EncodeCertificates([]*x509.Certificate{cert}, formats.PEM)
	if err != nil {
		return err
	}
	if err := writeOutFiles([]outFile{{keyOut, keyPEM, 0o600}, {certOut, certPEM, 0o644}}, c.Bool("force")); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote self-signed server certificate %s (%s, until %s)\n", certOut, strings.Join(ca.SANs(cert), ", "), day(cert.NotAfter))
	fmt.Fprintf(e.stdout, "wrote its key %s (%s, mode 0600)\n", keyOut, formats.KeyType(key.Public()))
	warnUnresolvable(e.stderr, &ca.Record{Name: name, Profile: ca.Server, SANs: ca.SANs(cert)})
	return nil
}

// outName returns the value of the flag, or def.
func outName(c *cli.Context, flag, def string) string {
	if v := c.String(flag); v != "" {
		return v
	}
	return def
}
