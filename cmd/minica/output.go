package main

import (
	"crypto/x509"
	"encoding/json"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"minica/formats"
)

// writeJSON prints v as one JSON object on one line.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// jsonFlag is the --json flag of every command that reports one result
// (list has its own, for JSON Lines). It returns a new value on each call,
// since urfave/cli keeps parse state on the flag value (see flags.go).
func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print the result as JSON"}
}

// day formats a time for humans, in UTC.
func day(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// subjectOf prints a certificate's subject as an RFC 4514 string.
func subjectOf(cert *x509.Certificate) string {
	dn, err := formats.DistinguishedName(cert.RawSubject)
	if err != nil {
		return cert.Subject.String()
	}
	return dn
}
