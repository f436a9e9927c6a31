package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

func verifyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a certificate the way the proxy does: chain, validity, usage and CRL",
		ArgsUsage: "FILE|NAME|SERIAL",
		Description: "Checks, in order: the CA's published CRL verifies and is current at --at (or\n" +
			"past its nextUpdate by at most --crl-grace, as in the proxy), the\n" +
			"certificate is signed by the CA, it is valid at --at, it is not a CA\n" +
			"(basicConstraints CA:TRUE or keyCertSign), its extended key usage includes --purpose, and\n" +
			"the CRL does not list it. A certificate of the CA that the revocation log\n" +
			"holds revoked is revoked, whatever the CRL says. Without --purpose, a\n" +
			"certificate for serverAuth only is checked as a server, anything else as a\n" +
			"client. Prints one verdict line; exit status 0 only when the certificate is valid.\n\n" +
			standaloneVerifyHelp +
			"Example:\n   minica verify simon.crt\n   minica verify web1 --purpose server --at 2030-01-01T00:00:00Z --json\n" +
			"   minica verify --trust root.crt --untrusted issuing.crt --crl root.crl --crl issuing.crl simon.crt",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "purpose", Usage: "client or server"},
			&cli.StringFlag{Name: "at", Usage: "check at this time (RFC 3339) instead of now"},
			&cli.StringFlag{Name: "crl-grace", Value: "0", Usage: "accept the CRL for this `DURATION` past its nextUpdate, like the proxy's --crl-grace"},
			jsonFlag(),
		}, standaloneVerifyFlags()...),
		Action: func(c *cli.Context) error { return runVerify(c, e) },
	}
}

type verdictJSON struct {
	Valid     bool      `json:"valid"`
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Serial    string    `json:"serial"`
	Subject   string    `json:"subject"`
	Purpose   string    `json:"purpose"`
	At        time.Time `json:"at"`
	CRLNumber string    `json:"crl_number,omitempty"`
	// RootCRLNumber is the root's CRL checked for an intermediate's leaf.
	RootCRLNumber string `json:"root_crl_number,omitempty"`
}

func runVerify(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	at := e.now()
	if v := c.String("at"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return usagef(c, "--at %q: want an RFC 3339 time such as 2030-01-02T15:04:05Z", v)
		}
		at = t
	}
	var grace time.Duration
	if v := c.String("crl-grace"); v != "0" {
		d, err := ca.ParseDuration(v)
		if err != nil {
			return usagef(c, "--crl-grace: %v", err)
		}
		grace = d
	}
	if standaloneVerify(c) {
		return runVerifyStandalone(c, e, at, grace)
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	cert, err := authority.ResolveCertificate(c.Args().First())
	if err != nil {
		return unknownNameHint(authority, err)
	}
	purpose, name, err := verifyPurpose(c, cert)
	if err != nil {
		return err
	}
	opts := revoke.VerifyOptions{Issuer: authority.Cert, Purpose: purpose, At: at, Grace: grace, Logged: authority.LoggedRevocation}
	v := verdictJSON{Serial: ca.SerialHex(cert.SerialNumber), Subject: subjectOf(cert), Purpose: name, At: at.UTC()}
	crl, crlErr := authority.LoadCRL()
	if crlErr == nil {
		opts.CRL = crl
		v.CRLNumber = crl.Number().String()
	}
	var rootCRLErr error
	if authority.IsIntermediate() {
		// The whole path: the leaf against this CA's CRL, this CA against
		// the root's (see docs/hierarchy.md).
		var rootCRL *revoke.CRL
		rootCRL, rootCRLErr = authority.LoadRootCRL()
		if rootCRLErr == nil {
			v.RootCRLNumber = rootCRL.Number().String()
		}
		err = revoke.VerifyPath(cert, revoke.PathOptions{Chain: authority.Chain, CRLs: []*revoke.CRL{opts.CRL, rootCRL},
			Purpose: purpose, At: at, Grace: grace, Logged: authority.LoggedRevocation})
	} else {
		err = revoke.VerifyCertificate(cert, opts)
	}
	var ve *revoke.VerifyError
	switch {
	case err == nil:
		v.Valid = true
	case errors.As(err, &ve):
		v.Reason, v.Detail = string(ve.Reason), ve.Detail
		if ve.Reason == revoke.ReasonCRLMissing && crlErr != nil {
			v.Detail = crlErr.Error()
		} else if ve.Reason == revoke.ReasonCRLMissing && rootCRLErr != nil {
			v.Detail = rootCRLErr.Error() + ": import it with 'minica crl import-root FILE'"
		}
		if ve.Unpublished {
			v.Detail += ": run 'minica crl'"
		}
	default:
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(e.stdout, v); err != nil {
			return err
		}
	} else if v.Valid {
		fmt.Fprintf(e.stdout, "valid: %s (serial %s) for %s at %s, CRL %s%s\n", v.Subject, v.Serial, name, day(at), v.CRLNumber,
			map[bool]string{true: ", root CRL " + v.RootCRLNumber}[v.RootCRLNumber != ""])
	} else {
		fmt.Fprintf(e.stdout, "invalid: %s: %s\n", v.Reason, v.Detail)
	}
	if !v.Valid {
		if ve.Reason == revoke.ReasonCRLExpired && crlErr == nil &&
			revoke.Freshness(crl.ThisUpdate(), crl.NextUpdate(), revoke.Thresholds{Grace: grace}, e.now()) == revoke.Expired {
			// The CA's own CRL, and still expired now: not a --at ahead of it.
			hintf(e.stderr, "%s", crlExpiredHint(crl.NextUpdate()))
		}
		return &exitError{code: 1}
	}
	return nil
}

// verifyPurpose maps --purpose to an extended key usage; without it, a
// serverAuth-only certificate is checked as a server, anything else as a
// client.
func verifyPurpose(c *cli.Context, cert *x509.Certificate) (x509.ExtKeyUsage, string, error) {
	p := strings.ToLower(c.String("purpose"))
	if p == "" {
		p = "client"
		if slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
			p = "server"
		}
	}
	switch p {
	case "client":
		return x509.ExtKeyUsageClientAuth, "clientAuth", nil
	case "server":
		return x509.ExtKeyUsageServerAuth, "serverAuth", nil
	}
	return 0, "", usagef(c, "--purpose %q: want client or server", c.String("purpose"))
}
