package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

// standaloneVerifyHelp is the part of verify's description about --trust.
const standaloneVerifyHelp = "With --trust, verify works without a CA directory, on files alone: FILE is a\n" +
	"certificate (any further certificates in it are intermediates, as in a chain\n" +
	"file), its path is built up to a certificate of --trust through those of\n" +
	"--untrusted, and every CA of the path below the anchor needs its CRL among\n" +
	"--crl, or --no-crl says that revocation is not to be checked (the verdict then\n" +
	"says so). The judge is the one of the proxy and of verify on a CA directory.\n\n"

func standaloneVerifyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "trust", Usage: "verify against the trust anchors in `FILE` (PEM or DER; repeatable) instead of a CA directory"},
		&cli.StringSliceFlag{Name: "untrusted", Usage: "with --trust: intermediate CA certificates in `FILE` to build the path with (repeatable)"},
		&cli.StringSliceFlag{Name: "crl", Usage: "with --trust: the CRL of a CA of the path in `FILE` (PEM or DER; repeatable, or one PEM file with several)"},
		&cli.BoolFlag{Name: "no-crl", Usage: "with --trust: do not check revocation (the verdict says so)"},
	}
}

// standaloneVerify reports whether verify runs on files: with --trust, or
// with a flag that goes with it (then runVerifyStandalone refuses).
func standaloneVerify(c *cli.Context) bool {
	return len(c.StringSlice("trust")) > 0 || len(c.StringSlice("untrusted")) > 0 ||
		len(c.StringSlice("crl")) > 0 || c.Bool("no-crl")
}

// standaloneVerdictJSON is the --json verdict of verify --trust.
type standaloneVerdictJSON struct {
	verdictJSON
	// Path is the subject of each certificate of the path judged, from
	// the certificate to its trust anchor; empty when none verified.
	Path []string `json:"path,omitempty"`
	// CRLs are the numbers of the CRLs given, in the order of --crl.
	CRLs []string `json:"crl_numbers,omitempty"`
	// RevocationChecked is false with --no-crl.
	RevocationChecked bool `json:"revocation_checked"`
}

// runVerifyStandalone is verify --trust: the certificate FILE judged over
// the path Go's verifier builds from --trust and --untrusted, with the
// CRLs of --crl, by revoke.JudgeChains.
func runVerifyStandalone(c *cli.Context, e *env, at time.Time, grace time.Duration) error {
	if len(c.StringSlice("trust")) == 0 {
		return usagef(c, "--untrusted, --crl and --no-crl go with --trust FILE; without it verify uses the CA directory")
	}
	skip := c.Bool("no-crl")
	if skip && len(c.StringSlice("crl")) > 0 {
		return usagef(c, "--no-crl and --crl exclude each other")
	}
	file := c.Args().First()
	certs, err := readCertsFile(file)
	if err != nil {
		return err
	}
	if len(certs) == 0 {
		return fmt.Errorf("reading certificates %q: no certificate in it", file)
	}
	leaf := certs[0]
	anchors, err := readCertFiles(c.StringSlice("trust"))
	if err != nil {
		return err
	}
	untrusted, err := readCertFiles(c.StringSlice("untrusted"))
	if err != nil {
		return err
	}
	untrusted = append(untrusted, certs[1:]...)
	crls, numbers, err := readStandaloneCRLs(c.StringSlice("crl"), append(append([]*x509.Certificate{}, anchors...), untrusted...))
	if err != nil {
		return err
	}
	purpose, name, err := verifyPurpose(c, leaf)
	if err != nil {
		return err
	}
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	for _, a := range anchors {
		roots.AddCert(a)
	}
	for _, u := range untrusted {
		inters.AddCert(u)
	}
	f := revoke.Facts{Cert: leaf, CAs: anchors, Purpose: purpose, Grace: grace, At: at, SkipRevocation: skip}
	v := standaloneVerdictJSON{verdictJSON: verdictJSON{Serial: ca.SerialHex(leaf.SerialNumber), Subject: subjectOf(leaf),
		Purpose: name, At: at.UTC()}, CRLs: numbers, RevocationChecked: !skip}
	// As in the proxy's handshake, Go's verifier builds the path (with
	// name constraints, path lengths and the usage along it) and the judge
	// decides on what it built; a path refused here is refused for that.
	chains, verr := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{purpose}})
	if verr != nil {
		f.Chain, f.SkipRevocation = revoke.ChainError(verr, leaf, at), true
		err = revoke.Judge(f)
	} else {
		var chain []*x509.Certificate
		chain, err = revoke.JudgeChains(f, chains, crls)
		for _, c := range chain {
			v.Path = append(v.Path, subjectOf(c))
		}
	}
	var ve *revoke.VerifyError
	switch {
	case err == nil:
		v.Valid = true
	case errors.As(err, &ve):
		v.Reason, v.Detail = string(ve.Reason), ve.Detail
	default:
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(e.stdout, v); err != nil {
			return err
		}
	} else if v.Valid {
		checked := "CRLs " + strings.Join(numbers, ", ")
		if skip {
			checked = "revocation not checked (--no-crl)"
		}
		fmt.Fprintf(e.stdout, "valid: %s (serial %s) for %s at %s, path of %d, %s\n", v.Subject, v.Serial, name, day(at), len(v.Path), checked)
	} else {
		fmt.Fprintf(e.stdout, "invalid: %s: %s\n", v.Reason, v.Detail)
	}
	if !v.Valid {
		return &exitError{code: 1}
	}
	return nil
}

// readCertFiles reads every certificate of files.
func readCertFiles(files []string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, f := range files {
		certs, err := readCertsFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, certs...)
	}
	return out, nil
}

// readStandaloneCRLs reads the CRLs of files with revoke.ParseCRLFile,
// the reader of the proxy, each verified against the one of cas that
// signed it, and returns them with their numbers. A CRL no certificate of
// cas signed is an error naming the file.
func readStandaloneCRLs(files []string, cas []*x509.Certificate) ([]revoke.IssuedCRL, []string, error) {
	var crls []revoke.IssuedCRL
	var numbers []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("reading CRL %q: %w", file, err)
		}
		parts, err := revoke.ParseCRLFile(data, cas)
		if errors.Is(err, revoke.ErrUnverified) {
			return nil, nil, fmt.Errorf("CRL %q: no certificate of --trust or --untrusted accepts it: %w", file, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading CRL %q: %w", file, err)
		}
		for _, c := range parts {
			crls = append(crls, c)
			numbers = append(numbers, c.CRL.Number().String())
		}
	}
	return crls, numbers, nil
}
