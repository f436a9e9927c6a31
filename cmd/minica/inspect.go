package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

func inspectCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "describe a certificate, CSR, CRL, key or PKCS#12 file (PEM or DER) in plain words",
		ArgsUsage: "FILE",
		Description: "Detects the format itself. An encrypted key or .p12 is opened with --password-file,\n" +
			"$MINICA_KEY_PASSWORD / $MINICA_P12_PASSWORD or a prompt; without one, inspect shows\n" +
			"what it can. With a CA directory, it also says whether this CA issued the certificate.\n\n" +
			"Example:\n   minica inspect simon.p12\n   minica inspect server.crt --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: jsonFlagUsage()},
			&cli.StringFlag{Name: "password-file", Usage: "read the key or .p12 password from `FILE`"},
		},
		Action: func(c *cli.Context) error { return runInspect(c, e) },
	}
}

// inspectView is the JSON of inspect: the description plus, per
// certificate, what the CA directory knows of it.
type inspectView struct {
	*formats.Description
	ThisCA []caView `json:"this_ca,omitempty"`
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
	var pw []byte
	envVar := keyPasswordEnv
	switch {
	case obj.Kind == formats.KindPKCS12:
		envVar = p12PasswordEnv
		pw, err = e.inputPassword(c, "password-file", envVar, "PKCS#12 password")
	case obj.Key != nil && obj.Key.Signer == nil:
		pw, err = e.inputPassword(c, "password-file", envVar, "Key password")
	}
	if err != nil {
		return err
	}
	d, err := formats.Describe(data, pw, e.now())
	if err != nil {
		return passwordHint(fmt.Errorf("%s: %w", file, err), "password-file", envVar)
	}
	view := inspectView{Description: d, ThisCA: e.caStatus(c, d)}
	if c.Bool("json") {
		return writeJSON(e.stdout, view)
	}
	if err := d.WriteText(e.stdout); err != nil {
		return err
	}
	return writeCAStatus(e.stdout, view.ThisCA)
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
	caSum := strings.ToLower(strings.ReplaceAll(formats.FingerprintSHA256(authority.Cert.Raw), ":", ""))
	for i, info := range d.Certificates {
		sum := strings.ToLower(strings.ReplaceAll(info.SHA256, ":", ""))
		if sum == caSum {
			views[i] = caView{IsCA: true}
			continue
		}
		serial, err := ca.ParseSerial(info.Serial)
		if err != nil {
			continue
		}
		r, err := authority.Record(serial)
		if err != nil || r.Fingerprint != sum {
			continue
		}
		views[i] = caView{Issued: true, Name: r.Name, Serial: r.Serial, Status: r.StatusAt(e.now())}
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
