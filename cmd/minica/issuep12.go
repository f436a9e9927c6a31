package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// issueP12Flags let `issue` bundle the new certificate in one go, as
// `minica export p12 NAME` would right after.
func issueP12Flags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "p12", Usage: "also write a .p12 with the key, certificate and CA chain (see 'minica export p12')"},
		&cli.StringFlag{Name: "p12-profile", Value: "modern", Usage: "with --p12: modern or compat"},
		&cli.StringFlag{Name: "p12-out", Usage: "with --p12: write the bundle to `FILE` (default: ./NAME.p12)"},
		&cli.StringFlag{Name: "p12-password-file", Usage: "with --p12: read its password from `FILE` (else $MINICA_P12_PASSWORD or a generated one)"},
		&cli.StringFlag{Name: "p12-password-out", Usage: "with --p12: write a generated password to `FILE` (mode 0600) instead of stderr"},
	}
}

// The --p12 flags of issue; there is no --force for the bundle (issue's
// --force is about the name) and no prompt (the CA password may use it).
var issueP12Names = p12Flags{profile: "p12-profile", passwordFile: "p12-password-file", passwordOut: "p12-password-out", out: "p12-out"}

// prepareIssueP12 checks the --p12 options before anything is issued, so
// that a bad one changes nothing; it returns nil without --p12.
func (e *env) prepareIssueP12(c *cli.Context, name string) (*p12Out, error) {
	if !c.Bool("p12") {
		for _, f := range []string{"p12-out", "p12-password-file", "p12-password-out"} {
			if c.IsSet(f) {
				return nil, usagef(c, "--%s needs --p12", f)
			}
		}
		return nil, nil
	}
	if err := ca.ValidateName(name); err != nil {
		return nil, usagef(c, "%v", err)
	}
	o, err := e.prepareP12(c, issueP12Names, outName(c, "p12-out", name+".p12"))
	if err != nil {
		return nil, err
	}
	if c.Bool("json") {
		o.report = e.stderr // stdout carries the one JSON object
	}
	return o, nil
}

// writeIssuedP12 bundles the certificate just issued. The certificate
// exists whatever happens here, so a failure says so, with its serial and
// the export command that writes the bundle again.
func (e *env) writeIssuedP12(c *cli.Context, o *p12Out, rec *ca.Record) error {
	if o == nil {
		return nil
	}
	if err := e.bundleIssued(c, o, rec); err != nil {
		return withHint(fmt.Errorf("issued %s certificate %q (serial %s), but writing its bundle failed: %w", rec.Profile, rec.Name, rec.Serial, err),
			"the certificate is valid and recorded; export the bundle again with '%s'", exportAgain(c, rec.Name))
	}
	return nil
}

func (e *env) bundleIssued(c *cli.Context, o *p12Out, rec *ca.Record) error {
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	leaf, err := authority.LoadLeaf(rec)
	if err != nil {
		return err
	}
	o.name = rec.Name
	return e.writeP12(o, leaf.Key, leaf.Cert, leaf.Chain)
}

// exportAgain is the `minica export p12` command line that writes the
// bundle the --p12 flags of issue asked for.
func exportAgain(c *cli.Context, name string) string {
	args := []string{"minica export p12", name}
	for _, f := range [][2]string{{"p12-profile", "profile"}, {"p12-out", "out"}, {"p12-password-file", "password-file"}, {"p12-password-out", "password-out"}} {
		if c.IsSet(f[0]) {
			args = append(args, "--"+f[1], shellQuote(c.String(f[0])))
		}
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
