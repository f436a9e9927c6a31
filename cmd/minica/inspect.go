package main

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
	"minica/revoke"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "describe a certificate, CSR, CRL, key or PKCS#12 file (PEM or DER) in plain words",
		ArgsUsage: "FILE",
		Description: "Detects the format itself. An encrypted key or .p12 is opened with --password-file,\n" +
			"$MINICA_KEY_PASSWORD / $MINICA_P12_PASSWORD or a prompt; without one, inspect shows\n" +
			"what it can. With a CA directory, it also says whether this CA issued the certificate.\n" +
			"A CRL's signature is checked against --ca, else the CA directory's certificate, and\n" +
			"inspect says whether verify and the proxy would accept it as the complete CRL; a\n" +
			"signature that does not verify makes inspect exit 1 after the description.\n\n" +
			"Example:\n   minica inspect simon.p12\n   minica inspect server.crt --json",
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.StringFlag{Name: "password-file", Usage: "read the key or .p12 password from `FILE`"},
			&cli.StringFlag{Name: "ca", Usage: "check a CRL's signature against the CA certificate in `FILE`"},
		},
		Action: func(c *cli.Context) error { return runInspect(c, e) },
	}
}

// inspectView is the JSON of inspect: the description plus, per
// certificate, what the CA directory knows of it.
type inspectView struct {
	*formats.Description
	ThisCA   []caView  `json:"this_ca,omitempty"`
	CRLCheck *crlCheck `json:"crl_check,omitempty"`
}

// crlCheck is what inspect found when it checked a CRL against its issuer.
type crlCheck struct {
	Signature string `json:"signature"`        // valid, bad or not checked
	Issuer    string `json:"issuer,omitempty"` // the CA certificate it was checked against
	Detail    string `json:"detail,omitempty"` // why it is bad or was not checked
	// Usable says whether verify and the proxy accept the CRL as the
	// complete CRL of the issuer (its dates aside); Refused says why not.
	Usable  *bool  `json:"usable,omitempty"`
	Refused string `json:"refused,omitempty"`
}

type caView struct {
	Issued bool      `json:"issued"`
	IsCA   bool      `json:"is_ca_certificate,omitempty"` // the CA's own certificate
	Name   string    `json:"name,omitempty"`
	Serial string    `json:"serial,omitempty"`
	Status ca.Status `json:"status,omitempty"`
}

func runInspect(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	file := c.Args().First()
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading %q: %w", file, err)
	}
	obj, err := formats.Detect(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	envVar, prompt := keyPasswordEnv, ""
	switch {
	case obj.Kind == formats.KindPKCS12:
		envVar, prompt = p12PasswordEnv, "PKCS#12 password"
	case obj.Key != nil && obj.Key.Signer == nil:
		prompt = "Key password"
	}
	var d *formats.Description
	var pwErr error // from the password's source, returned as it is
	err = e.inputRetry(c, "password-file", envVar, func() (err error) {
		var pw []byte
		if prompt != "" {
			if pw, pwErr = e.inputPassword(c, "password-file", envVar, prompt); pwErr != nil {
				return pwErr
			}
		}
		d, err = formats.Describe(data, pw, e.now())
		return err
	})
	switch {
	case pwErr != nil:
		return pwErr
	case err != nil:
		return passwordHint(c, file, err, "password-file", envVar)
	}
	view := inspectView{Description: d, ThisCA: e.caStatus(c, d)}
	var sigErr error
	if obj.CRL != nil {
		if view.CRLCheck, sigErr = e.checkCRL(c, data, obj.CRL); view.CRLCheck == nil {
			return sigErr
		}
	}
	if c.Bool("json") {
		err = writeJSON(e.stdout, view)
	} else {
		err = writeInspectText(e.stdout, view)
	}
	if err != nil {
		return err
	}
	if sigErr != nil {
		return fmt.Errorf("%s: %w", file, sigErr)
	}
	return nil
}

func writeInspectText(w io.Writer, view inspectView) error {
	if err := view.WriteText(w); err != nil {
		return err
	}
	if err := writeCAStatus(w, view.ThisCA); err != nil {
		return err
	}
	return writeCRLCheck(w, view.CRLCheck)
}

// checkCRL checks a CRL against --ca or the CA directory's certificate. A
// signature that does not verify is reported in the check and returned as
// the error; a nil check comes with an error that stops inspect (an
// unreadable --ca).
func (e *env) checkCRL(c *cli.Context, data []byte, crl *x509.RevocationList) (*crlCheck, error) {
	var issuer *x509.Certificate
	explicit := c.IsSet("ca")
	if explicit {
		file := c.String("ca")
		pemData, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading CA certificate %q: %w", file, err)
		}
		certs, err := formats.ParseCertificates(pemData)
		if err != nil {
			return nil, fmt.Errorf("reading CA certificate %q: %w", file, err)
		}
		issuer = certs[0]
	} else if authority, err := openCA(c, e); err == nil {
		issuer = authority.Cert
		authority.Close()
	}
	if issuer == nil {
		return &crlCheck{Signature: "not checked", Detail: "issuer unknown; use --ca"}, nil
	}
	name, _ := formats.DistinguishedName(issuer.RawSubject)
	if !explicit && !bytes.Equal(crl.RawIssuer, issuer.RawSubject) {
		crlIssuer, _ := formats.DistinguishedName(crl.RawIssuer)
		return &crlCheck{Signature: "not checked",
			Detail: fmt.Sprintf("issued by %q, not by this CA (%q); use --ca", crlIssuer, name)}, nil
	}
	check := &crlCheck{Signature: "valid", Issuer: name}
	err := revoke.CheckSignature(data, issuer)
	switch {
	case errors.Is(err, revoke.ErrBadSignature) || errors.Is(err, revoke.ErrWrongIssuer):
		check.Signature, check.Detail = "bad", err.Error()
		return check, err
	case err != nil:
		check.Signature, check.Detail = "not checked", err.Error()
	}
	_, err = revoke.ParseCRL(data, issuer)
	usable := err == nil
	check.Usable = &usable
	if err != nil {
		check.Refused = err.Error()
	}
	return check, nil
}

func writeCRLCheck(w io.Writer, check *crlCheck) error {
	if check == nil {
		return nil
	}
	sig := check.Signature
	switch {
	case check.Signature == "valid":
		sig = fmt.Sprintf("valid (issuer %s)", check.Issuer)
	case check.Signature == "bad":
		sig = fmt.Sprintf("BAD (%s)", strings.TrimPrefix(check.Detail, "revoke: "))
	case check.Detail != "":
		sig = fmt.Sprintf("%s (%s)", check.Signature, strings.TrimPrefix(check.Detail, "revoke: "))
	}
	if _, err := fmt.Fprintf(w, "\nIssuer check\n  %-16s %s\n", "Signature:", sig); err != nil {
		return err
	}
	if check.Usable == nil {
		return nil
	}
	use := "complete CRL for client certificates"
	if !*check.Usable {
		use = "REFUSED by verify and the proxy: " + strings.TrimPrefix(check.Refused, "revoke: ")
	}
	_, err := fmt.Fprintf(w, "  %-16s %s\n", "Use:", use)
	return err
}

// caStatus looks each certificate up in the CA directory, if there is one;
// a missing or unreadable CA directory just leaves the answer out.
func (e *env) caStatus(c *cli.Context, d *formats.Description) []caView {
	if len(d.Certificates) == 0 {
		return nil
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil
	}
	defer authority.Close()
	views := make([]caView, len(d.Certificates))
	for i, info := range d.Certificates {
		isCA, r, _ := authority.Identify(info.Serial, info.SHA256)
		switch {
		case isCA:
			views[i] = caView{IsCA: true}
		case r != nil:
			views[i] = caView{Issued: true, Name: r.Name, Serial: r.Serial, Status: r.StatusAt(e.now())}
		}
	}
	return views
}

func writeCAStatus(w io.Writer, views []caView) error {
	if len(views) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nThis CA\n"); err != nil {
		return err
	}
	for i, v := range views {
		line := "not issued by this CA"
		switch {
		case v.IsCA:
			line = "this CA's own certificate"
		case v.Issued:
			line = fmt.Sprintf("issued as %q (serial %s), %s", v.Name, v.Serial, v.Status)
		}
		label := "Certificate:"
		if len(views) > 1 {
			label = fmt.Sprintf("Certificate %d:", i+1)
		}
		if _, err := fmt.Fprintf(w, "  %-16s %s\n", label, line); err != nil {
			return err
		}
	}
	return nil
}
