package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func showCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show the record of a certificate, by name, serial or certificate file",
		ArgsUsage: "NAME|SERIAL|FILE",
		Description: "A name shows every certificate issued under it, oldest first.\n\n" +
			"Example:\n   minica show simon\n   minica show 5f:3c:9a:...\n   minica show ./simon.crt --json",
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error { return runShow(c, e) },
	}
}

func runShow(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	t, err := authority.Resolve(c.Args().First())
	if err != nil {
		return unknownNameHint(authority, err)
	}
	now := e.now()
	for i, r := range t.Records {
		if c.Bool("json") {
			err = writeJSON(e.stdout, showView{recordJSON(r, now), authority.Path(r.CertPath()), keyPath(authority, r)})
		} else {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			err = printRecord(e.stdout, authority, r, now)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type showView struct {
	ca.Record
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file,omitempty"`
}

func keyPath(authority *ca.CA, r *ca.Record) string {
	if !r.HasKey {
		return ""
	}
	return authority.Path(r.KeyPath())
}

func printRecord(w io.Writer, authority *ca.CA, r *ca.Record, now time.Time) error {
	line := func(k, v string) { fmt.Fprintf(w, "%-11s %s\n", k, v) }
	line("name", r.Name)
	line("serial", r.Serial)
	line("profile", string(r.Profile))
	status := string(r.StatusAt(now))
	if r.Status == ca.StatusRevoked {
		status += fmt.Sprintf(" at %s (%s)", day(r.RevokedAt), r.Reason)
	}
	line("status", status)
	if r.Subject != "" {
		line("subject", r.Subject)
		line("sans", strings.Join(r.SANs, ", "))
		line("not before", day(r.NotBefore))
		line("not after", fmt.Sprintf("%s (%s)", day(r.NotAfter), daysLeft(r.NotAfter, now)))
		line("sha256", r.Fingerprint)
		line("cert", authority.Path(r.CertPath()))
	}
	if p := keyPath(authority, r); p != "" {
		line("key", p)
	}
	if r.RenewalOf != "" {
		line("renews", r.RenewalOf)
	}
	if r.RenewedBy != "" {
		line("renewed by", r.RenewedBy)
	}
	if r.ACMEAccount != "" {
		line("account", r.ACMEAccount+" (ACME)")
	}
	if r.Device != "" {
		line("device", strconv.QuoteToASCII(r.Device)+" (sign-in)")
	}
	return nil
}

func daysLeft(t, now time.Time) string {
	d := int(t.Sub(now).Hours() / 24)
	if t.Before(now) {
		return fmt.Sprintf("expired %d days ago", -d)
	}
	return fmt.Sprintf("%d days left", d)
}
