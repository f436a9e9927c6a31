package main

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

func signCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "sign",
		Usage:     "sign a certificate signing request; the requester keeps the key",
		ArgsUsage: "CSR",
		Description: "Takes the CSR's subject (CN, O, OU) and SANs after validation, and never\n" +
			"its extensions: the certificate gets the profile's. Flags add to or replace\n" +
			"what the CSR asks for. A CSR with two or more CNs is refused unless --cn\n" +
			"chooses the one the certificate gets (and, without --name, its name).\n\n" +
			"Example:\n   openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \\\n" +
			"     -keyout simon.key -out simon.csr -subj /CN=simon\n   minica sign simon.csr --profile client --email simon@example.com",
		Flags: append(append(leafFlags(ca.Client),
			&cli.StringFlag{Name: "profile", Value: "client", Usage: "server or client"},
			&cli.StringFlag{Name: "name", Usage: "the certificate's name in the CA (default: the CSR's CN)"},
			passwordFileFlag(),
			pinFileFlag(),
		), copyFlags(false)...),
		Action: func(c *cli.Context) error { return runSign(c, e) },
	}
}

func runSign(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	profile, err := ca.ParseProfile(c.String("profile"))
	if err != nil {
		return usagef(c, "--profile: %v", err)
	}
	csr, err := readCSR(c.Args().First())
	if err != nil {
		return err
	}
	cn := csr.Subject.CommonName
	if cns := commonNames(csr); len(cns) > 1 {
		if !c.IsSet("cn") {
			return withHint(fmt.Errorf("CSR %s has %d common names (%s): minica signs a subject with one", c.Args().First(), len(cns), quoteAll(cns)),
				"ask for a CSR with one CN, or pass --cn to choose it")
		}
		cn = c.String("cn")
	}
	name := c.String("name")
	if name == "" {
		name = cn
		if ca.ValidateName(name) != nil {
			return usagef(c, "the CSR's CN %q cannot serve as a name; pass --name", cn)
		}
	}
	req, err := leafRequest(c, name, profile)
	if err != nil {
		return err
	}
	req.MergeCSR(csr, ca.CSRFields{CommonName: c.IsSet("cn"), Organization: c.IsSet("org"), OrganizationalUnit: c.IsSet("ou")})
	if ignored := ca.IgnoredCSRExtensions(csr); len(ignored) > 0 {
		fmt.Fprintf(e.stderr, "minica: note: the CSR asks for %s; minica never copies CSR extensions, the certificate gets the %s profile's\n",
			strings.Join(ignored, ", "), profile)
	}
	return issueLocked(c, e, req)
}

// readCSR reads a PEM or DER CSR and checks its signature and key.
func readCSR(file string) (*x509.CertificateRequest, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading CSR: %w", err)
	}
	if typ, ok := formats.PEMType(data); ok && typ != "CERTIFICATE REQUEST" && typ != "NEW CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("%s holds a PEM %q block, not a CERTIFICATE REQUEST", file, typ)
	}
	csr, err := formats.ParseCSR(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid CSR (PEM or DER): %w", file, err)
	}
	if csr.PublicKey == nil {
		return nil, fmt.Errorf("CSR %s: unsupported key algorithm %s: want RSA (2048 bits or more), ECDSA P-256/P-384 or Ed25519", file, csr.PublicKeyAlgorithm)
	}
	if err := ca.CheckPublicKey(csr.PublicKey); err != nil {
		return nil, fmt.Errorf("CSR %s: %w", file, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("CSR %s has a bad signature: %w", file, err)
	}
	return csr, nil
}

// commonNames returns every CN of the CSR's subject, in order. Go's parser
// keeps only the last in Subject.CommonName; OpenSSL-based lookups often
// take the first, so a subject with two means different clients to
// different readers.
func commonNames(csr *x509.CertificateRequest) []string {
	var cns []string
	for _, atv := range csr.Subject.Names {
		if atv.Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 3}) {
			cns = append(cns, fmt.Sprint(atv.Value))
		}
	}
	return cns
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
